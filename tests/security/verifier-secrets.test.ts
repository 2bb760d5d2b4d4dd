/**
 * Task code (the harness and the verifier) must not find a secret of the machine running it:
 * `forge run` is started with an admin token and upstream keys in its environment, and a
 * harness and a verifier look for them in their own environment, their parent's
 * (/proc/$PPID/environ), and every process they can see (/proc/*\/environ, cmdline).
 * With the sandbox (its own PID namespace) they find nothing; without it the same probe finds
 * the token in /proc/$PPID/environ, which shows the probe works and why the sandbox is needed.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findBwrap } from "../../workflows/local/sandbox.ts";

const ROOT = join(import.meta.dir, "..", "..");
const PREFIX = "forge-secret-";

/** The probe, a task file: prints each place a value starting with the prefix was found. */
const PROBE = `
import { readdirSync, readFileSync } from "node:fs";
const prefix = ["forge", "secret", ""].join("-");
const found = [];
const look = (where, text) => { if (text.includes(prefix)) found.push(where); };
look("own env", Object.values(process.env).join("\\n"));
const pids = readdirSync("/proc").filter((p) => /^\\d+$/.test(p));
for (const pid of pids) {
  for (const file of ["environ", "cmdline"]) {
    try { look(\`/proc/\${pid}/\${file}\${pid === String(process.ppid) ? " (parent)" : ""}\`, readFileSync(\`/proc/\${pid}/\${file}\`, "latin1")); } catch {}
  }
}
console.log(JSON.stringify({ role: process.argv[2], pids: pids.length, found }));
process.exit(found.length ? 1 : 0);
`;

function forgeRun(sandbox: "auto" | "none") {
  const dir = mkdtempSync(join(tmpdir(), "forge-secrets-"));
  const secrets = {
    FORGE_ADMIN_TOKEN: `${PREFIX}admin-${crypto.randomUUID()}`,
    FORGE_UPSTREAM_API_KEY: `${PREFIX}upstream-${crypto.randomUUID()}`,
    OPENAI_API_KEY: `${PREFIX}openai-${crypto.randomUUID()}`,
    ANTHROPIC_API_KEY: `${PREFIX}anthropic-${crypto.randomUUID()}`,
  };
  const bun = process.execPath;
  writeFileSync(
    join(dir, "experiment.yaml"),
    [
      "apiVersion: openforge.dev/v1",
      "kind: Experiment",
      "metadata: {name: secrets}",
      "spec:",
      "  policy: {model: forge-sim/qwen3-sim}",
      `  harness: {name: command, command: [bash, -c, '${bun} probe.ts harness > harness-probe.json; true']}`,
      "  environment:",
      `    tasks: [{id: probe, instruction: look, files: {probe.ts: ${JSON.stringify(PROBE)}}, test: '${bun} probe.ts verifier'}]`,
      `  rollouts: {k: 1, sandbox: ${sandbox}}`,
    ].join("\n"),
  );
  const run = Bun.spawnSync([bun, join(ROOT, "bin", "forge.ts"), "run", join(dir, "experiment.yaml"), "--data", join(dir, "data"), "--json", "--quiet", "--allow-root-unsandboxed"], {
    cwd: ROOT,
    env: { ...process.env, ...secrets },
    stdout: "pipe",
    stderr: "pipe",
  });
  try {
    expect(run.exitCode).toBe(0);
    const result = JSON.parse(run.stdout.toString()) as { sandbox: string; outcomes: { dir: string; reward: number; status: string }[] };
    const outcome = result.outcomes[0]!;
    const harness = JSON.parse(readFileSync(join(outcome.dir, "workspace", "harness-probe.json"), "utf8")) as { found: string[]; pids: number };
    const verifier = JSON.parse(readFileSync(join(outcome.dir, "logs", "verifier.stdout"), "utf8").trim().split("\n").at(-1)!) as { found: string[]; pids: number };
    // Nothing of the secrets may reach the records or the rollout's files either way.
    return { sandbox: result.sandbox, outcome, harness, verifier };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("secrets and task code", () => {
  test.skipIf(!findBwrap())("sandboxed: neither the harness nor the verifier finds the admin token or an upstream key anywhere in /proc", () => {
    const { sandbox, outcome, harness, verifier } = forgeRun("auto");
    expect(sandbox).toBe("bwrap");
    expect(harness.found).toEqual([]);
    expect(verifier.found).toEqual([]);
    // Its own PID namespace: a handful of processes (bwrap's init, the bridge, the probe), not the host's.
    expect(harness.pids).toBeLessThan(8);
    expect(verifier.pids).toBeLessThan(8);
    expect(outcome).toMatchObject({ status: "ok", reward: 1 });
  }, 90_000);

  test("unsandboxed (opt-in), the same probe finds the token in its parent's environment: the probe works, the sandbox is what protects", () => {
    const { sandbox, verifier, outcome } = forgeRun("none");
    expect(sandbox).toBe("none");
    // The forge process (the verifier script's parent, the probe's grandparent) holds the token in its environ.
    expect(verifier.found.some((where) => /^\/proc\/\d+\/environ/.test(where))).toBe(true);
    expect(outcome.reward).toBe(0);
  }, 90_000);
});
