/**
 * The bubblewrap sandbox of a rollout: its own user namespace with every capability dropped
 * (so it holds when forge runs as root, in containers and CI) in which task code is uid 1000,
 * no new privileges, its own filesystem view (system directories read-only, a /etc of its own
 * with none of the host's secrets, the workspace and a private HOME read-write, a fresh /tmp,
 * /proc and /dev), its own PID, IPC and UTS namespaces, and its own network
 * namespace whose only way out is the proxy (see bridge.ts: the proxy's port on the namespace's
 * loopback is forwarded over a unix socket).
 */
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export type SandboxMode = "auto" | "bwrap" | "none";

/** The environment variable that lets forge run rollouts unsandboxed as root (`--allow-root-unsandboxed`). */
export const ALLOW_ROOT_UNSANDBOXED_ENV = "FORGE_ALLOW_ROOT_UNSANDBOXED";

/**
 * Flags that make the sandbox hold for any caller, root included: a user namespace (a root
 * caller keeps its capabilities without one, and could remount a read-only bind read-write) in
 * which task code is uid/gid 1000 (SANDBOX_USER), not root,
 * all capabilities dropped, no further user namespaces inside, and the process namespaces.
 * bwrap itself sets no_new_privs.
 */
const HOLDING_FLAGS = ["--unshare-user", "--uid", "1000", "--gid", "1000", "--cap-drop", "ALL", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session", "--die-with-parent"];

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
  /** The size of the sandbox's /tmp and of its /dev/shm (tmpfs each) in bytes; unlimited when unset (tmpfs's default: half the RAM). */
  tmpBytes?: number;
};

const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"];

/** Who task code is inside the sandbox (bwrap --uid/--gid), named in the synthesized /etc/passwd. */
export const SANDBOX_USER = { name: "forge", uid: 1000, gid: 1000 };

/** The login variables of SANDBOX_USER, for task code run in the sandbox (Bun's os.userInfo reads USER). */
export const SANDBOX_ENV = { USER: SANDBOX_USER.name, LOGNAME: SANDBOX_USER.name };

/**
 * What of the host's /etc the sandbox shows, read-only: what programs need to run (the dynamic
 * linker's cache, CA certificates and OpenSSL's config, locale and time zone, Debian's
 * alternatives links, fonts, MIME and terminal data, the shells' and Python's system config).
 * Nothing else: no shadow or gshadow, no ssh keys, no ssl/private, no package managers'
 * credentials (npmrc, pip.conf), no machine-id.
 */
const HOST_ETC = [
  "alternatives", "bash.bashrc", "ca-certificates", "ca-certificates.conf", "chromium", "chromium.d", "debian_version", "fonts",
  "gai.conf", "host.conf", "inputrc", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "locale.alias", "locale.gen", "localtime",
  "magic", "magic.mime", "mime.types", "networks", "os-release", "profile", "profile.d", "protocols", "services",
  "shells", "ssl/certs", "ssl/openssl.cnf", "terminfo", "timezone", "xdg", "xml", "sgml",
];

/** The /etc files written for the sandbox: its user, loopback names, no DNS server. */
function synthesizedEtc(): Record<string, string> {
  const { name, uid, gid } = SANDBOX_USER;
  return {
    // The home in passwd is /tmp (the sandbox's own tmpfs): $HOME is set to the rollout's, and
    // what looks the home up in passwd instead still gets a writable directory.
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${name}:x:${uid}:${gid}:forge rollout:/tmp:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${name}:x:${gid}:\nnogroup:x:65534:\n`,
    hosts: "127.0.0.1\tlocalhost rollout\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    hostname: "rollout\n",
    // No network but loopback: no name server to ask.
    "resolv.conf": "# the rollout's sandbox has no network but the proxy bridge on loopback\n",
    "nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n",
  };
}

let etcDir: string | undefined;
/** The synthesized /etc files, written once per process to a private directory removed at exit. */
function synthesizedEtcDir(): string {
  if (etcDir && existsSync(etcDir)) return etcDir;
  const dir = mkdtempSync(join(tmpdir(), "forge-sandbox-etc-"));
  for (const [name, content] of Object.entries(synthesizedEtc())) writeFileSync(join(dir, name), content, { mode: 0o644 });
  chmodSync(dir, 0o755);
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return (etcDir = dir);
}

/** The bwrap arguments of the sandbox's /etc: the synthesized files and HOST_ETC, read-only. */
function etcArgs(): string[] {
  // --dir makes it 0755 (--perms would need bwrap ≥ 0.5).
  const args = ["--dir", "/etc"];
  const dir = synthesizedEtcDir();
  for (const name of Object.keys(synthesizedEtc())) args.push("--ro-bind", join(dir, name), `/etc/${name}`);
  // Python's system config (/etc/python3.11/sitecustomize.py is linked from /usr/lib).
  const pythons = existsSync("/etc") ? readdirSync("/etc").filter((name) => /^python3(\.\d+)?$/.test(name)) : [];
  for (const name of [...new Set([...HOST_ETC, ...pythons])]) {
    const path = `/etc/${name}`;
    // A link (localtime → /usr/share/zoneinfo/…, os-release → ../usr/lib/os-release) is bound as
    // what it points at; one that points nowhere is left out.
    if (existsSync(path)) args.push("--ro-bind", path, path);
  }
  return args;
}

let sizeSupported: boolean | undefined;
/** Whether this bwrap has `--size` (older releases lack it; Debian 12's 0.8 has it). */
function bwrapHasSize(path: string): boolean {
  sizeSupported ??= Bun.spawnSync([path, "--help"], { stdout: "pipe", stderr: "pipe" }).stdout.toString().includes("--size");
  return sizeSupported;
}

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
  args.push(...etcArgs());
  for (const dir of SYSTEM_DIRS) {
    if (!existsSync(dir)) continue;
    // Merged-/usr systems have /bin → usr/bin: recreate the link rather than bind it twice.
    if (lstatSync(dir).isSymbolicLink()) args.push("--symlink", readlinkSync(dir), dir);
    else args.push("--ro-bind", dir, dir);
  }
  // /tmp and /dev/shm are the sandbox's scratch: tmpfs, each capped at tmpBytes.
  // An older bwrap without --size leaves them unlimited (docs/local-executor.md, "Limits (disk)").
  const size = spec.tmpBytes && bwrapHasSize(bwrap.path) ? ["--size", String(spec.tmpBytes)] : [];
  args.push("--proc", "/proc", "--dev", "/dev", ...size, "--tmpfs", "/dev/shm", ...size, "--tmpfs", "/tmp");
  const bunDir = dirname(process.execPath);
  const readOnly = [bunDir, ...spec.readOnly, ...(spec.network ? [dirname(INNER_BRIDGE)] : [])];
  for (const path of readOnly) args.push("--ro-bind", path, path);
  for (const path of spec.writable) args.push("--bind", path, path);
  for (const path of spec.tmpfs ?? []) args.push("--tmpfs", path);
  for (const [source, target] of spec.readOnlyAt ?? []) args.push("--ro-bind", source, target);
  for (const [source, target] of spec.writableAt ?? []) args.push("--bind", source, target);
  const forwards = spec.network ? [{ socket: spec.network.socket, port: spec.network.port }, ...(spec.network.also ?? [])] : [];
  for (const forward of forwards) args.push("--ro-bind", forward.socket, forward.socket);
  // bwrap's own root and its /dev (tmpfs, holding the mount points and device nodes) would
  // otherwise take writes without limit; the device nodes still work.
  args.push("--remount-ro", "/dev", "--remount-ro", "/", "--chdir", spec.cwd, "--");
  if (spec.network) args.push(process.execPath, INNER_BRIDGE, ...forwards.flatMap((forward) => [String(forward.port), forward.socket]), "--");
  return [...args, ...argv];
}
