/**
 * The bubblewrap sandbox of a rollout: its own user namespace with every capability dropped
 * (so it holds when forge runs as root, in containers and CI), no new privileges, its own
 * filesystem view (system directories read-only, the workspace and a private HOME read-write,
 * a fresh /tmp, /proc and /dev), its own PID, IPC and UTS namespaces, and its own network
 * namespace whose only way out is the proxy (see bridge.ts: the proxy's port on the namespace's
 * loopback is forwarded over a unix socket).
 */
import { existsSync, lstatSync, readlinkSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

export type SandboxMode = "auto" | "bwrap" | "none";

/** The environment variable that lets forge run rollouts unsandboxed as root (`--allow-root-unsandboxed`). */
export const ALLOW_ROOT_UNSANDBOXED_ENV = "FORGE_ALLOW_ROOT_UNSANDBOXED";

/**
 * Flags that make the sandbox hold for any caller, root included: a user namespace (a root
 * caller keeps its capabilities without one, and could remount a read-only bind read-write),
 * all capabilities dropped, no further user namespaces inside, and the process namespaces.
 * bwrap itself sets no_new_privs.
 */
const HOLDING_FLAGS = ["--unshare-user", "--cap-drop", "ALL", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session", "--die-with-parent"];

type Bwrap = { path: string; flags: string[] };

/** What the probe saw inside: capabilities left and whether no_new_privs is set. */
export type SandboxProbe = { capEff: string; noNewPrivs: boolean };

function probe(path: string, flags: string[]): SandboxProbe | undefined {
  const run = Bun.spawnSync([path, ...flags, "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "cat", "/proc/self/status"], { stdout: "pipe", stderr: "ignore" });
  if (run.exitCode !== 0) return undefined;
  const status = run.stdout.toString();
  const capEff = /^CapEff:\s*([0-9a-f]+)/m.exec(status)?.[1];
  const noNewPrivs = /^NoNewPrivs:\s*1/m.test(status);
  return capEff === undefined ? undefined : { capEff, noNewPrivs };
}

let cachedBwrap: Bwrap | null | undefined;
/**
 * bwrap with flags under which it works here and holds: inside, no capability is effective and
 * no_new_privs is set. A container that forbids user namespaces (or an old bwrap) gives null.
 */
function holdingBwrap(): Bwrap | null {
  if (cachedBwrap !== undefined) return cachedBwrap;
  const path = Bun.which("bwrap");
  if (!path) return (cachedBwrap = null);
  // --disable-userns needs bwrap ≥ 0.8; without it a nested user namespace gains nothing over
  // the mounts bwrap made (they are locked to the outer namespace), so it is extra, not required.
  for (const flags of [HOLDING_FLAGS, HOLDING_FLAGS.filter((flag) => flag !== "--disable-userns")]) {
    const seen = probe(path, flags);
    if (seen && /^0+$/.test(seen.capEff) && seen.noNewPrivs) return (cachedBwrap = { path, flags });
  }
  return (cachedBwrap = null);
}

/**
 * Absolute path of bwrap when it is installed and its sandbox holds here (user namespace,
 * CapEff 0, no_new_privs), else null.
 *
 * @example
 * findBwrap(); // "/usr/bin/bwrap"
 */
export function findBwrap(): string | null {
  return holdingBwrap()?.path ?? null;
}

/** The sandbox cannot be used as asked; the message says what to install or which flag to pass. */
export class SandboxError extends Error {
  override name = "SandboxError";
}

const isRoot = () => process.getuid?.() === 0;

/**
 * Decides whether rollouts are sandboxed: `bwrap` requires it, `auto` uses it when it works.
 * Running task code unsandboxed as root (no user namespace, every capability) is refused unless
 * the caller opts in (`allowRootUnsandboxed`, `--allow-root-unsandboxed` or
 * FORGE_ALLOW_ROOT_UNSANDBOXED=1).
 *
 * @example
 * resolveSandbox("auto"); // "bwrap" where bubblewrap holds, else "none" (or an error as root)
 */
export function resolveSandbox(mode: SandboxMode, options: { allowRootUnsandboxed?: boolean } = {}): "bwrap" | "none" {
  const bwrap = mode === "none" ? null : holdingBwrap();
  if (bwrap) return "bwrap";
  const why =
    mode === "none"
      ? "the sandbox is off (sandbox: none)"
      : Bun.which("bwrap")
        ? "bubblewrap cannot create a user namespace with all capabilities dropped here (a container's seccomp profile or kernel.unprivileged_userns_clone=0 forbids it)"
        : "bubblewrap is not installed (apt-get install -y bubblewrap)";
  if (mode === "bwrap") throw new SandboxError(`spec.rollouts.sandbox is bwrap but ${why}; fix that, or set sandbox: none|auto`);
  const allowed = options.allowRootUnsandboxed ?? process.env[ALLOW_ROOT_UNSANDBOXED_ENV] === "1";
  if (isRoot() && !allowed) {
    throw new SandboxError(
      `refusing to run rollouts as root without a sandbox: ${why}, and the harness and verifier would run as root with every capability, able to change this machine. ` +
        `Run forge as an unprivileged user, make bubblewrap work, or opt in with --allow-root-unsandboxed (${ALLOW_ROOT_UNSANDBOXED_ENV}=1).`,
    );
  }
  return "none";
}

/**
 * The warning for a run whose rollouts will not be sandboxed although nobody chose that:
 * `auto` where bubblewrap is missing or cannot create namespaces. An explicit `none` is the
 * user's choice and gets no warning; as root without the opt-in the run is refused instead
 * (resolveSandbox says why), so there is nothing to warn about.
 *
 * @example
 * unsandboxedWarning("auto", { bwrapWorks: false, root: false }); // "WARNING: bubblewrap ... UNSANDBOXED ..."
 * unsandboxedWarning("none", { bwrapWorks: false }); // undefined
 */
export function unsandboxedWarning(
  mode: SandboxMode,
  options: { bwrapWorks?: boolean; root?: boolean; allowRootUnsandboxed?: boolean } = {},
): string | undefined {
  if (mode !== "auto" || (options.bwrapWorks ?? findBwrap() !== null)) return undefined;
  const allowed = options.allowRootUnsandboxed ?? process.env[ALLOW_ROOT_UNSANDBOXED_ENV] === "1";
  if ((options.root ?? isRoot()) && !allowed) return undefined;
  return (
    "WARNING: bubblewrap (bwrap) is not installed or cannot create namespaces here, so rollouts run UNSANDBOXED: " +
    "the harness, the model's commands and the verifier run as this user, with its files and network. " +
    "Install it (apt-get install -y bubblewrap), or set spec.rollouts.sandbox: none (or --sandbox none) to run unsandboxed on purpose."
  );
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
  /**
   * With a unix socket path: no network but the proxy, bridged to 127.0.0.1:port inside; `also`:
   * more sockets bridged the same way (a browser task's site server).
   */
  network?: { socket: string; port: number; also?: { socket: string; port: number }[] };
  /** No network at all (the verifier). */
  offline?: boolean;
  /** Fresh empty directories (the verifier's HOME). */
  tmpfs?: string[];
};

const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"];

/** The in-namespace forwarder (bridge-inner.ts), run with the Bun that runs forge. */
const INNER_BRIDGE = fileURLToPath(new URL("./bridge-inner.ts", import.meta.url));

/**
 * The argv that runs `argv` inside the sandbox.
 *
 * @example
 * sandboxArgv({ writable: [ws, home], readOnly: [], cwd: ws }, ["bash", "-c", "ls"]);
 * // ["/usr/bin/bwrap", "--unshare-user", "--cap-drop", "ALL", ..., "--", "bash", "-c", "ls"]
 */
export function sandboxArgv(spec: SandboxSpec, argv: string[]): string[] {
  const bwrap = holdingBwrap();
  if (!bwrap) throw new SandboxError("bubblewrap is not available, or its sandbox does not hold here");
  const args = [bwrap.path, ...bwrap.flags, "--hostname", "rollout"];
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
  for (const path of spec.tmpfs ?? []) args.push("--tmpfs", path);
  for (const [source, target] of spec.readOnlyAt ?? []) args.push("--ro-bind", source, target);
  for (const [source, target] of spec.writableAt ?? []) args.push("--bind", source, target);
  const forwards = spec.network ? [{ socket: spec.network.socket, port: spec.network.port }, ...(spec.network.also ?? [])] : [];
  for (const forward of forwards) args.push("--ro-bind", forward.socket, forward.socket);
  args.push("--chdir", spec.cwd, "--");
  if (spec.network) args.push(process.execPath, INNER_BRIDGE, ...forwards.flatMap((forward) => [String(forward.port), forward.socket]), "--");
  return [...args, ...argv];
}
