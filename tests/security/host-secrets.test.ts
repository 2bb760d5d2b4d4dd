/**
 * Attack 1 of issue 35: a harness (and a verifier) reading the host's secrets. `forge run` as
 * root used to bind the host's /etc and run task code as uid 0 of its user namespace, which owns
 * what root owns: `head -c 60 /etc/shadow` printed the host's shadow file. Now the sandbox has a
 * /etc of its own (workflows/local/sandbox.ts: passwd and group for its user, hosts,
 * resolv.conf, nsswitch, and the host's CA certificates, locale, time zone, linker cache, …),
 * task code is uid 1000, and a task whose files link out of its folder is refused.
 *
 * Run as root (as CI and containers run forge) and, through `setpriv`, as an unprivileged user.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startProxy } from "../../proxy/index.ts";
import { startPolicySimulator } from "../../simulator/index.ts";
import { runLocal } from "../../workflows/local/executor.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";
import { loadTaskDir, taskFromSpec } from "../../workflows/tasks/index.ts";

const ROOT = join(import.meta.dir, "..", "..");
const ADMIN = "host-secrets-admin";
const isRoot = process.getuid?.() === 0;
const NOBODY = 65534;
let root: string;
let secretFile: string;
let secret: string;
let sim: Awaited<ReturnType<typeof startPolicySimulator>>;
let proxy: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "forge-host-secrets-"));
  chmodSync(root, 0o755);
  sim = await startPolicySimulator({ seed: 1 });
  proxy = await startProxy({ listen: "127.0.0.1:0", upstreams: [sim.url], dataDir: join(root, "proxy-data"), adminToken: ADMIN, mode: "train", healthIntervalMs: 0 });
  // A secret of forge's user beside the data directory (as ~/.ssh or a cloud credential is).
  secret = `forge-host-secret-${crypto.randomUUID()}`;
  mkdirSync(join(root, "secrets"), { mode: 0o700 });
  secretFile = join(root, "secrets", "token");
  writeFileSync(secretFile, secret, { mode: 0o600 });
});
afterAll(async () => {
  await proxy?.stop();
  await sim?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** What a snooping harness or verifier tries; its output goes to stdout. */
const SNOOP = () => `
exec 2>&1
echo "uid=$(id -u) user=$(id -un)"
head -c 60 /etc/shadow
head -c 60 /etc/gshadow
ls /etc/ssh /etc/ssl/private /root
cat ${secretFile}
cat /proc/1/environ | tr '\\0' '\\n' | grep ADMIN
echo "etc: $(ls /etc | tr '\\n' ' ')"
python3 -c 'import ssl; print("ca certs", ssl.create_default_context().cert_store_stats()["x509_ca"])'
python3 -c 'import os, pwd, time; print("pw user", pwd.getpwuid(os.getuid()).pw_name, "tz", time.tzname[0])'
bun -e 'console.log("js user", require("os").userInfo().username)'
`;

const hostShadow = () => (isRoot ? readFileSync("/etc/shadow", "utf8").split("\n")[0]! : "");

function expectNoSecret(probe: string) {
  expect(probe).toContain("uid=1000 user=forge");
  expect(probe).toMatch(/\/etc\/shadow'? for reading: No such file or directory/);
  expect(probe).toMatch(/\/etc\/gshadow'? for reading: No such file or directory/);
  if (hostShadow()) expect(probe).not.toContain(hostShadow().slice(0, 30));
  expect(probe).not.toContain(secret);
  expect(probe).not.toContain(ADMIN);
  expect(probe).toContain(`${secretFile}: No such file or directory`);
  expect(probe).not.toMatch(/\betc: .*\b(shadow|gshadow|sudoers|ssh|machine-id|npmrc|pip\.conf)\b/);
  // What programs need from /etc is still there: the CA store, passwd for their user, the zone.
  expect(probe).toMatch(/ca certs [1-9]\d*/);
  expect(probe).toContain("pw user forge tz");
  expect(probe).toContain("js user forge");
}

const task = () => taskFromSpec({ id: "snoop", instruction: SNOOP(), files: {}, metadata: {}, test: `{ ${SNOOP()} } ; exit 0` }, "t");

describe.skipIf(!findBwrap())("no host secret inside the sandbox", () => {
  test(`as ${isRoot ? "root" : "this user"}: harness and verifier see no shadow, no secret beside the data directory; task code is uid 1000`, async () => {
    const dataDir = join(root, "as-root");
    const { outcomes } = await runLocal({ run: "snoop", experiment: "host-secrets", tasks: [task()], k: 1, harness: "command", harnessCommand: ["bash", "-c", "{prompt}"], model: "m", proxyUrl: proxy.url, adminToken: ADMIN, dataDir, parallelism: 1, timeoutSeconds: 60, quiet: true, sandbox: "bwrap" });
    const outcome = outcomes[0]!;
    expect(outcome).toMatchObject({ status: "ok", reward: 1 });
    expectNoSecret(readFileSync(join(outcome.dir, "logs", "harness.stdout"), "utf8"));
    expectNoSecret(readFileSync(join(outcome.dir, "logs", "verifier.stdout"), "utf8"));
    // The probe can fail: outside the sandbox the same user reads the secret (and root the shadow).
    expect(Bun.spawnSync(["cat", secretFile], { stdout: "pipe" }).stdout.toString()).toBe(secret);
    if (isRoot) expect(Bun.spawnSync(["bash", "-c", "head -c 60 /etc/shadow"], { stdout: "pipe" }).stdout.toString()).toContain(hostShadow().slice(0, 30));
  });

  test.skipIf(!isRoot || !Bun.which("setpriv"))("as an unprivileged user (setpriv to uid 65534): the same", async () => {
    const dataDir = join(root, "as-user");
    const home = join(root, "user-home");
    for (const dir of [dataDir, home]) {
      mkdirSync(dir, { recursive: true });
      chownSync(dir, NOBODY, NOBODY);
    }
    // The user's own secret: readable by it outside the sandbox, not inside.
    chownSync(join(root, "secrets"), NOBODY, NOBODY);
    chownSync(secretFile, NOBODY, NOBODY);
    const script = join(root, "run-as-user.ts");
    writeFileSync(
      script,
      `import { runLocal } from ${JSON.stringify(join(ROOT, "workflows/local/executor.ts"))};
import { taskFromSpec } from ${JSON.stringify(join(ROOT, "workflows/tasks/index.ts"))};
const task = taskFromSpec(JSON.parse(process.env.TASK), "t");
const { outcomes, sandbox } = await runLocal({ run: "snoop-user", experiment: "host-secrets", tasks: [task], k: 1, harness: "command", harnessCommand: ["bash", "-c", "{prompt}"], model: "m", proxyUrl: process.env.PROXY, adminToken: process.env.ADMIN, dataDir: process.env.DATA, parallelism: 1, timeoutSeconds: 60, quiet: true, sandbox: "bwrap" });
console.log(JSON.stringify({ uid: process.getuid(), sandbox, outcome: outcomes[0] }));
`,
    );
    chmodSync(script, 0o644);
    const spec = { id: "snoop", instruction: SNOOP(), files: {}, metadata: {}, test: `{ ${SNOOP()} } ; exit 0` };
    const run = Bun.spawn(["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", process.execPath, script], {
      cwd: root,
      env: { PATH: process.env.PATH!, HOME: home, TASK: JSON.stringify(spec), PROXY: proxy.url, ADMIN, DATA: dataDir },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = [await new Response(run.stdout).text(), await new Response(run.stderr).text()];
    expect(await run.exited, err).toBe(0);
    const { uid, sandbox, outcome } = JSON.parse(out.trim().split("\n").at(-1)!);
    expect(uid).toBe(NOBODY);
    expect(sandbox).toBe("bwrap");
    expect(outcome).toMatchObject({ status: "ok", reward: 1 });
    expectNoSecret(readFileSync(join(outcome.dir, "logs", "harness.stdout"), "utf8"));
    expectNoSecret(readFileSync(join(outcome.dir, "logs", "verifier.stdout"), "utf8"));
    // The probe can fail: outside the sandbox the user reads its secret.
    const outside = Bun.spawnSync(["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "cat", secretFile], { stdout: "pipe" }).stdout.toString();
    expect(outside).toBe(secret);
  }, 120_000);
});

describe("task files that link out of the task folder", () => {
  const taskDir = (name: string) => {
    const dir = join(root, "tasks", name);
    mkdirSync(join(dir, "environment"), { recursive: true });
    mkdirSync(join(dir, "tests"), { recursive: true });
    writeFileSync(join(dir, "instruction.md"), "read the key\n");
    writeFileSync(join(dir, "tests", "test.sh"), "echo 1 > $FORGE_LOGS/reward.txt\n");
    return dir;
  };

  test("a link to /etc/shadow in environment/ is refused, naming the file", () => {
    const dir = taskDir("shadow-link");
    symlinkSync("/etc/shadow", join(dir, "environment", "key"));
    expect(() => loadTaskDir(dir)).toThrow(`${join(dir, "environment", "key")}: is a link to /etc/shadow, outside the task folder`);
  });

  test("instruction.md linking to a secret, a relative link climbing out and a dangling one outside are refused; a link inside is fine", () => {
    const prompt = taskDir("prompt-link");
    rmSync(join(prompt, "instruction.md"));
    symlinkSync(secretFile, join(prompt, "instruction.md"));
    expect(() => loadTaskDir(prompt)).toThrow(`${join(prompt, "instruction.md")}: is a link to ${secretFile}`);

    const climbing = taskDir("climbing-link");
    symlinkSync("../../../secrets/token", join(climbing, "tests", "data"));
    expect(() => loadTaskDir(climbing)).toThrow(join(climbing, "tests", "data"));

    const dangling = taskDir("dangling-link");
    symlinkSync("/nonexistent/forge-secret", join(dangling, "environment", "later"));
    expect(() => loadTaskDir(dangling)).toThrow(join(dangling, "environment", "later"));

    const inside = taskDir("inside-link");
    writeFileSync(join(inside, "environment", "data.txt"), "data\n");
    symlinkSync("data.txt", join(inside, "environment", "alias.txt"));
    symlinkSync("../instruction.md", join(inside, "environment", "prompt.md"));
    expect(loadTaskDir(inside).id).toBe("inside-link");
  });
});
