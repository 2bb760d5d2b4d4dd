/**
 * `forge run` tells the user where its proxy is and how to authenticate, so the control API
 * (rollout state, trajectories) can be used while the run lasts: the URL is printed and, with
 * the admin token, written to `<data>/proxy.json` readable by the owner only.
 */
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = join(import.meta.dir, "..", "..");

test("forge run prints the proxy URL and writes it with the admin token to <data>/proxy.json (0600)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "forge-run-proxy-"));
  const release = join(dir, "release");
  try {
    const experiment = join(dir, "experiment.yaml");
    writeFileSync(
      experiment,
      [
        "apiVersion: openforge.dev/v1",
        "kind: Experiment",
        "metadata: {name: proxyinfo}",
        "spec:",
        "  policy: {model: forge-sim/qwen3-sim, mode: train}",
        // The harness waits for the test to have used the control API, then exits 0. Unsandboxed
        // (trusted test code; as root that needs the opt-in) so it sees the release file in /tmp.
        `  harness: {name: command, command: [bash, -c, "until [ -e ${release} ]; do sleep 0.1; done"]}`,
        "  environment:",
        '    tasks: [{id: a, instruction: wait, test: "true"}]',
        "  rollouts: {k: 1, parallelism: 1, sandbox: none, timeoutSeconds: 300}",
      ].join("\n"),
    );
    const data = join(dir, "data");
    const child = Bun.spawn([process.execPath, join(root, "bin", "forge.ts"), "run", experiment, "--data", data, "--quiet", "--allow-root-unsandboxed"], { cwd: root, stdout: "pipe", stderr: "pipe" });
    const stderr = new Response(child.stderr).text();
    const stdout = new Response(child.stdout).text();
    // Wait (without a deadline of our own: the test's timeout bounds it) for the rollout to run.
    const rolloutDir = () => (existsSync(join(data, "rollouts")) ? readdirSync(join(data, "rollouts")).filter((name) => !name.startsWith(".") && name !== "outcomes.json") : []);
    while (rolloutDir().length === 0 && child.exitCode === null) await Bun.sleep(100);
    const info = JSON.parse(readFileSync(join(data, "proxy.json"), "utf8")) as { url: string; admin_token: string; mode: string };
    expect(statSync(join(data, "proxy.json")).mode & 0o777).toBe(0o600);
    // Plain checks: Bun's toMatchObject writes its asymmetric matchers into the object it was given.
    expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.admin_token).toMatch(/^forge-admin-/);
    expect(info.mode).toBe("train");
    const [rolloutId] = rolloutDir();
    const read = await fetch(`${info.url}/control/rollouts/${rolloutId}`, { headers: { authorization: `Bearer ${info.admin_token}` } });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ rollout: { rollout_id: rolloutId, task_id: "a" } });
    writeFileSync(release, "");
    expect(await child.exited).toBe(0);
    const log = await stderr;
    expect(log).toContain(`proxy at ${info.url} (train mode)`);
    expect(log).toContain(`control API while the run lasts: Authorization: Bearer <admin_token from ${join(data, "proxy.json")}>`);
    expect(log).not.toContain(info.admin_token); // the token itself is only in the 0600 file
    expect(await stdout).toContain("1 rollouts");
  } finally {
    writeFileSync(release, "");
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);
