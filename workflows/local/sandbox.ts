/**
 * The bubblewrap sandbox of a rollout: its own filesystem view (system directories read-only,
 * the workspace and a private HOME read-write, a fresh /tmp, /proc and /dev), its own PID, IPC
 * and UTS namespaces, and its own network namespace whose only way out is the proxy (see
 * bridge.ts: the proxy's port on the namespace's loopback is forwarded over a unix socket).
 */
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

export type SandboxMode = "auto" | "bwrap" | "none";

/** Absolute path of bwrap when it is installed and works here (a container may forbid namespaces). */
let cachedBwrap: string | null | undefined;
export function findBwrap(): string | null {
  if (cachedBwrap !== undefined) return cachedBwrap;
  const path = Bun.which("bwrap");
  if (!path) return (cachedBwrap = null);
  const probe = Bun.spawnSync([path, "--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"], { stdout: "ignore", stderr: "ignore" });
  return (cachedBwrap = probe.exitCode === 0 ? path : null);
}

/**
 * Decides whether rollouts are sandboxed: `bwrap` requires it, `auto` uses it when it works.
 *
 * @example
 * resolveSandbox("auto"); // "bwrap" where bubblewrap works, else "none"
 */
export function resolveSandbox(mode: SandboxMode): "bwrap" | "none" {
  if (mode === "none") return "none";
  if (findBwrap()) return "bwrap";
  if (mode === "bwrap") throw new Error("spec.rollouts.sandbox is bwrap but bubblewrap is not installed or cannot create namespaces here (apt-get install -y bubblewrap, or set sandbox: none|auto)");
  return "none";
}

export type SandboxSpec = {
  /** Bound read-write at the same path. */
  writable: string[];
  /** Extra read-only paths at the same path (the harness's own files). */
  readOnly: string[];
  /** source → path inside, read-only (the verifier's /tests). */
  readOnlyAt?: [string, string][];
  /** source → path inside, read-write (the verifier's /logs/verifier). */
  writableAt?: [string, string][];
  cwd: string;
  /** With a unix socket path: no network but the proxy, bridged to 127.0.0.1:port inside. */
  network?: { socket: string; port: number };
  /** No network at all (the verifier). */
  offline?: boolean;
};

const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];

/** The in-namespace forwarder (bridge-inner.ts), run with the Bun that runs forge. */
const INNER_BRIDGE = fileURLToPath(new URL("./bridge-inner.ts", import.meta.url));

/**
 * The argv that runs `argv` inside the sandbox.
 *
 * @example
 * sandboxArgv({ writable: [ws, home], readOnly: [], cwd: ws }, ["bash", "-c", "ls"]);
 * // ["/usr/bin/bwrap", "--die-with-parent", ..., "--", "bash", "-c", "ls"]
 */
export function sandboxArgv(spec: SandboxSpec, argv: string[]): string[] {
  const bwrap = findBwrap();
  if (!bwrap) throw new Error("bubblewrap is not available");
  const args = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "rollout"];
  if (spec.network || spec.offline) args.push("--unshare-net");
  for (const dir of SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    // Merged-/usr systems have /bin → usr/bin: recreate the link rather than bind it twice.
    if (lstatSync(dir).isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else args.push("--ro-bind", dir, dir);
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  const bunDir = dirname(process.execPath);
  const readOnly = [bunDir, ...spec.readOnly, ...(spec.network ? [dirname(INNER_BRIDGE)] : [])];
  for (const path of readOnly) args.push("--ro-bind", path, path);
  for (const path of spec.writable) args.push("--bind", path, path);
  for (const [source, target] of spec.readOnlyAt ?? []) args.push("--ro-bind", source, target);
  for (const [source, target] of spec.writableAt ?? []) args.push("--bind", source, target);
  if (spec.network) args.push("--ro-bind", spec.network.socket, spec.network.socket);
  args.push("--chdir", spec.cwd, "--");
  if (spec.network) args.push(process.execPath, INNER_BRIDGE, String(spec.network.port), spec.network.socket, "--");
  return [...args, ...argv];
}
