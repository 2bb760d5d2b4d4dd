/**
 * The bubblewrap sandbox when forge runs as root (containers, CI): a harness and a verifier that
 * try to get out. Inside, no capability is effective (CapEff 0), no_new_privs is set, a read-only
 * bind cannot be remounted read-write, nothing outside the workspace can be written, and no
 * nested user namespace can be made. Where the sandbox cannot hold, forge refuses to run task
 * code as root unless the user opts in.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { findBwrap, resolveSandbox, SandboxError } from "../../workflows/local/sandbox.ts";
import { taskFromSpec } from "../../workflows/tasks/index.ts";

const ROOT = join(import.meta.dir, "..", "..");
const ADMIN = "sandbox-root-admin";
const isRoot = process.getuid?.() === 0;
let root: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-sandbox-root-"));
  sim = await startPolicySimulator({ seed: 1 });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** What an escaping harness tries; each line says whether it worked. */
const ESCAPE = (marker: string) => `
exec 2>/dev/null
grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs):' /proc/self/status
mount -o remount,rw /usr && echo "ESCAPED remount /usr rw" || echo "refused remount /usr"
mount -o remount,rw,bind /etc && echo "ESCAPED remount /etc rw" || echo "refused remount /etc"
mount -t tmpfs none /usr/local && echo "ESCAPED mount over /usr/local" || echo "refused mount"
touch /etc/${marker} && echo "ESCAPED wrote /etc" || echo "refused write /etc"
touch /usr/${marker} && echo "ESCAPED wrote /usr" || echo "refused write /usr"
unshare --user --map-root-user true && echo "ESCAPED nested user namespace" || echo "refused nested user namespace"
chroot / true && echo "ESCAPED chroot" || echo "refused chroot"
`;

describe.skipIf(!isRoot || !findBwrap())("bwrap as root", () => {
  test("harness and verifier: CapEff 0, no_new_privs, the read-only binds stay read-only, the host is unchanged", async () => {
    const marker = `forge-escape-${crypto.randomUUID()}`;
    const task = taskFromSpec({ id: "escape", instruction: `{ ${ESCAPE(marker)} } > probe.txt`, files: {}, metadata: {}, test: `{ ${ESCAPE(`${marker}-verifier`)} } ; exit 0` }, "t");
    const { outcomes, sandbox } = await runLocal({
      run: "root",
      experiment: "sandbox-root",
      tasks: [task],
      k: 1,
      harness: "command",
      harnessCommand: ["bash", "-c", "{prompt}"],
      model: "m",
      proxyUrl: proxy.url,
      adminToken: ADMIN,
      dataDir: join(root, "data"),
      parallelism: 1,
      timeoutSeconds: 30,
      quiet: true,
      sandbox: "bwrap",
    });
    expect(sandbox).toBe("bwrap");
    const outcome = outcomes[0]!;
    expect(outcome).toMatchObject({ status: "ok", reward: 1 });
    const harness = readFileSync(join(outcome.dir, "workspace", "probe.txt"), "utf8");
    const verifier = readFileSync(join(outcome.dir, "logs", "verifier.stdout"), "utf8");
    for (const probe of [harness, verifier]) {
      expect(probe).toMatch(/^CapEff:\s+0000000000000000$/m);
      expect(probe).toMatch(/^CapPrm:\s+0000000000000000$/m);
      expect(probe).toMatch(/^CapBnd:\s+0000000000000000$/m);
      expect(probe).toMatch(/^NoNewPrivs:\s+1$/m);
      expect(probe).not.toContain("ESCAPED");
      for (const what of ["remount /usr", "remount /etc", "mount", "write /etc", "write /usr", "nested user namespace", "chroot"]) expect(probe).toContain(`refused ${what}`);
    }
    for (const path of [`/etc/${marker}`, `/usr/${marker}`, `/etc/${marker}-verifier`, `/usr/${marker}-verifier`]) expect(existsSync(path)).toBe(false);
  }, 60_000);

  test("the check can fail: bwrap without a user namespace, as root, leaves every capability (what the flags fix)", () => {
    const bare = Bun.spawnSync([findBwrap()!, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "cat", "/proc/self/status"], { stdout: "pipe" });
    expect(bare.exitCode).toBe(0);
    expect(bare.stdout.toString()).not.toMatch(/^CapEff:\s+0+$/m);
  });
});

describe.skipIf(!isRoot)("as root without a sandbox that holds", () => {
  test("resolveSandbox refuses unless the user opts in", () => {
    expect(() => resolveSandbox("none", { allowRootUnsandboxed: false })).toThrow(SandboxError);
    expect(() => resolveSandbox("none", { allowRootUnsandboxed: false })).toThrow(/--allow-root-unsandboxed \(FORGE_ALLOW_ROOT_UNSANDBOXED=1\)/);
    expect(resolveSandbox("none", { allowRootUnsandboxed: true })).toBe("none");
  });

  test("forge run exits 2 naming the opt-in: sandbox none, and a bwrap that cannot make a user namespace", () => {
    const dir = mkdtempSync(join(tmpdir(), "forge-refuse-"));
    try {
      const experiment = join(dir, "experiment.yaml");
      writeFileSync(
        experiment,
        "apiVersion: openforge.dev/v1\nkind: Experiment\nmetadata: {name: refuse}\nspec:\n  policy: {model: m}\n  harness: {name: command, command: [bash, -c, 'touch /tmp/forge-should-not-run']}\n  environment: {tasks: [{id: a, instruction: x, test: 'true'}]}\n",
      );
      // A bwrap first on PATH that fails like one in a container whose seccomp forbids user namespaces.
      const fakeBin = join(dir, "bin");
      mkdirSync(fakeBin);
      writeFileSync(join(fakeBin, "bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n");
      chmodSync(join(fakeBin, "bwrap"), 0o755);
      const { FORGE_ALLOW_ROOT_UNSANDBOXED: _, ...env } = process.env;
      const forge = (args: string[], extraEnv: Record<string, string> = {}) =>
        Bun.spawnSync([process.execPath, join(ROOT, "bin", "forge.ts"), "run", experiment, "--data", join(dir, "data"), "--quiet", ...args], { cwd: ROOT, env: { ...env, ...extraEnv }, stdout: "pipe", stderr: "pipe" });
      const none = forge(["--sandbox", "none"]);
      expect(none.exitCode).toBe(2);
      expect(none.stderr.toString()).toContain("refusing to run rollouts as root without a sandbox: the sandbox is off");
      const broken = forge([], { PATH: `${fakeBin}:${process.env.PATH}` });
      expect(broken.exitCode).toBe(2);
      expect(broken.stderr.toString()).toContain("bubblewrap cannot create a user namespace with all capabilities dropped here");
      expect(broken.stderr.toString()).toContain("--allow-root-unsandboxed");
      // The opt-in runs it (unsandboxed), as the user asked.
      const allowed = forge(["--sandbox", "none", "--allow-root-unsandboxed", "--json"]);
      expect(allowed.exitCode).toBe(0);
      expect(JSON.parse(allowed.stdout.toString())).toMatchObject({ sandbox: "none", outcomes: [{ status: "ok", reward: 1 }] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
