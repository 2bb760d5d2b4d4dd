/**
 * A GUI rollout end to end, as `forge run` runs the GUI quickstart: one browser task
 * (examples/gui-quickstart's newsletter-signup, k = 1) with the real Claude Code driving headless
 * Chromium through the real Playwright MCP server inside the rollout's bwrap sandbox, offline,
 * against the policy simulator. Checked: the reward comes from the verifier reading the site
 * server's log; every call is recorded COMPLETE; each screenshot is stored once in the rollout's
 * content and named in the calls' blob refs; the prompt ids hold Qwen2.5-VL's number of image
 * tokens per screenshot; the veRL export carries the images (image_refs, the .blobs folder); the
 * trajectory page shows them. And a harness cannot plant the site's log: it sees the site only
 * over HTTP. Skipped, saying why, where claude, chromium, node or a working bwrap is missing
 * (.ci/run installs them all).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import { imageDimensions, imageTokenCount, QWEN2_5_VL_PROCESSOR } from "../../model/testing.ts";
import { createContentStore, readRecords } from "../../records/index.ts";
import { TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { findBwrap } from "../../workflows/local/sandbox.ts";

const ROOT = join(import.meta.dir, "..", "..");
// Claude Code's start, Chromium's start and a 25k-token system prompt on a loaded 2-core machine.
const SLOW = 600_000;
const IMAGE_PAD = 151655;

const missing = [
  Bun.which("claude") ? undefined : "claude (npm i -g @anthropic-ai/claude-code@2.1.197)",
  Bun.which("chromium") ?? Bun.which("chromium-browser") ? undefined : "chromium (apt-get install -y chromium)",
  Bun.which("node") ? undefined : "node",
  findBwrap() ? undefined : "a bwrap sandbox that holds (apt-get install -y bubblewrap)",
].filter(Boolean);
if (missing.length > 0) console.warn(`gui: skipping the GUI rollout tests: missing ${missing.join(", ")}`);

const scratch = mkdtempSync(join(tmpdir(), "forge-gui-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const forge = async (args: string[]) => {
  const proc = Bun.spawn([process.execPath, join(ROOT, "bin", "forge.ts"), ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
};

async function callsOf(data: string): Promise<ModelCall[]> {
  const calls: ModelCall[] = [];
  for await (const { record } of readRecords(join(data, "log"))) if (record.kind.case === "modelCall") calls.push(record.kind.value);
  return calls;
}

/** An experiment over the given task directories with the GUI quickstart's script, every failure rate 0. */
function experimentIn(dir: string, harness: Record<string, unknown>, policy: Record<string, unknown> = {}): string {
  const script = parse(readFileSync(join(ROOT, "examples", "policies", "gui-quickstart.yaml"), "utf8"));
  script.failure_rate = 0;
  for (const task of script.tasks) task.failure_rate = 0;
  writeFileSync(join(dir, "policy.yaml"), stringify(script));
  const experiment = {
    apiVersion: "openforge.dev/v1",
    kind: "Experiment",
    metadata: { name: "gui-test" },
    spec: {
      policy: { model: "forge-sim/qwen3-sim", mode: "train", simulator: { seed: 7, script: "policy.yaml" }, ...policy },
      harness,
      environment: { tasks: "tasks" },
      rollouts: { k: 1, parallelism: 1, timeoutSeconds: 300, sandbox: "bwrap" },
      metrics: { k: [1] },
    },
  };
  writeFileSync(join(dir, "experiment.yaml"), stringify(experiment));
  return join(dir, "experiment.yaml");
}

describe("GUI rollouts", () => {
  // Token-in (docs/gui.md, "Token-in"): each harness once, the simulator playing vLLM's or
  // SGLang's generate route (bench/gui-samples.ts measures every harness on both).
  for (const [harness, engine] of [["claude-code", "vllm"], ["codex", "sglang"], ["opencode", "sglang"]] as const) {
    const absent = [...missing, Bun.which(harness === "claude-code" ? "claude" : harness) ? undefined : harness].filter(Boolean);
    test.skipIf(absent.length > 0)(
      `token-in: ${harness} on newsletter-signup, the simulator playing ${engine}: one agent sample with 0 drift, both screenshots' image tokens, reward 1`,
      async () => {
        const dir = join(scratch, `token-in-${harness}`);
        mkdirSync(join(dir, "tasks"), { recursive: true });
        cpSync(join(ROOT, "examples", "gui-quickstart", "tasks", "newsletter-signup"), join(dir, "tasks", "newsletter-signup"), { recursive: true });
        const experiment = experimentIn(dir, { name: harness, options: harness === "claude-code" ? { maxTurns: 20 } : {} }, { tokenMode: "token-in", engine });
        const data = join(dir, "data");
        const run = await forge(["run", experiment, "--data", data, "--json", "--quiet"]);
        expect(run.code, run.err).toBe(0);
        const [outcome] = JSON.parse(run.out).outcomes;
        expect(outcome.status, `${outcome.error}\n${outcome.verifier_output}`).toBe("ok");
        expect(outcome.reward).toBe(1);
        const calls = await callsOf(data);
        expect(calls.length).toBeGreaterThan(4);
        for (const call of calls) expect(call.tokenStatus, call.tokenStatusReason).toBe(TokenStatus.COMPLETE);
        const exported = await forge(["export", "--data", data, "--min-group-size", "1", "--out", join(dir, "export", "batch.parquet"), "--json"]);
        expect(exported.code, exported.err).toBe(0);
        const rows = readFileSync(join(dir, "export", "batch.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line));
        // One agent sample per rollout (opencode's title call is auxiliary, left out of the export).
        expect(rows).toHaveLength(1);
        const [row] = rows;
        expect([row.extra_info.is_final, row.extra_info.drift_tokens, row.reward]).toEqual([true, 0, 1]);
        expect(row.image_refs).toHaveLength(2);
        const pads = [...row.prompt_ids, ...row.response_ids].filter((id: number) => id === IMAGE_PAD).length;
        expect(pads).toBe(2 * imageTokenCount(720, 1280, QWEN2_5_VL_PROCESSOR));
      },
      SLOW,
    );
  }

  test.skipIf(missing.length > 0)(
    "claude-code drives the browser through Playwright's MCP server: verifier reward, COMPLETE calls, screenshots stored once, image tokens, export and viewer carry them",
    async () => {
      const dir = join(scratch, "claude");
      mkdirSync(join(dir, "tasks"), { recursive: true });
      cpSync(join(ROOT, "examples", "gui-quickstart", "tasks", "newsletter-signup"), join(dir, "tasks", "newsletter-signup"), { recursive: true });
      const experiment = experimentIn(dir, { name: "claude-code", options: { maxTurns: 20 } });
      const data = join(dir, "data");
      const run = await forge(["run", experiment, "--data", data, "--json", "--quiet"]);
      expect(run.code, run.err).toBe(0);
      const result = JSON.parse(run.out);
      const [outcome] = result.outcomes;
      expect(outcome.status, `${outcome.error}\n${outcome.verifier_output}`).toBe("ok");
      expect(outcome.reward).toBe(1);
      // The reward is the verifier's, read from its own output directory.
      expect(outcome.verifier_output).toContain("[reward 1 from <rollout>/verifier/reward.txt]");
      // The site saw the form from the headless browser; the agent had only HTTP to it.
      const site = readFileSync(join(outcome.dir, "site", "requests.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line));
      const post = site.find((entry) => entry.method === "POST" && entry.path === "/subscribe.html");
      expect(post.form).toEqual({ name: "Ada Lovelace", email: "ada@example.com" });
      expect(post.user_agent).toContain("HeadlessChrome");

      const calls = await callsOf(data);
      expect(calls.length).toBe(7);
      expect(calls.every((call) => call.tokenStatus === TokenStatus.COMPLETE)).toBe(true);
      // Two screenshots: each named by the calls that carry it, each stored once in the rollout's content.
      const shots = [...new Set(calls.flatMap((call) => call.blobRefs))];
      expect(shots).toHaveLength(2);
      expect(calls.at(-1)!.blobRefs).toEqual(shots);

      const exported = await forge(["export", "--data", data, "--min-group-size", "1", "--out", join(dir, "export", "batch.parquet"), "--json"]);
      expect(exported.code, exported.err).toBe(0);
      const blobs = join(dir, "export", "batch.blobs");
      expect(readdirSync(blobs).sort()).toEqual([...shots].sort());
      const pngs = shots.map((sha) => readFileSync(join(blobs, sha)));
      for (const png of pngs) expect(imageDimensions(png)).toEqual({ width: 1280, height: 720 });
      const stored = calls.flatMap((call) => call.content);
      for (const png of pngs) expect(stored.filter((piece) => png.equals(piece)).length).toBe(1);
      // A content store rebuilds every request body from those pieces.
      const store = createContentStore();
      for (const call of calls) store.add(call);
      const rows = readFileSync(join(dir, "export", "batch.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line));
      const final = rows.find((row) => row.extra_info.is_final);
      expect(final.image_refs).toEqual(shots);
      expect(final.reward).toBe(1);
      // Each screenshot is as many <|image_pad|> tokens as Qwen2.5-VL's processor makes of 1280x720.
      const pads = [...final.prompt_ids, ...final.response_ids].filter((id: number) => id === IMAGE_PAD).length;
      expect(pads).toBe(2 * imageTokenCount(720, 1280, QWEN2_5_VL_PROCESSOR));

      const report = join(dir, "report.html");
      const analyzed = await forge(["analyze", "--data", data, "--report", report, "--quiet"]);
      expect(analyzed.code, analyzed.err).toBe(0);
      const page = readFileSync(join(dir, "report.rollouts", readdirSync(join(dir, "report.rollouts"))[0]!), "utf8");
      for (const sha of shots) expect(page).toContain(`<figure class="image" data-sha256="${sha}"><img alt="image sha256 ${sha.slice(0, 12)}…" src="data:image/png;base64,`);
    },
    SLOW,
  );

  test.skipIf(missing.length > 0)(
    "a harness reaches the site only over HTTP: its writes to the site's log paths are lost, and the verifier reads the server's own log",
    async () => {
      const dir = join(scratch, "attack");
      const task = join(dir, "tasks", "plant");
      mkdirSync(join(task, "site"), { recursive: true });
      mkdirSync(join(task, "tests"), { recursive: true });
      writeFileSync(join(task, "instruction.md"), "Subscribe at {site_url}.");
      writeFileSync(join(task, "site", "index.html"), "<h1>The Daily Loom</h1>");
      writeFileSync(
        join(task, "tests", "test.sh"),
        `python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; print(1 if any(x["method"]=="POST" for x in r) else 0)' "$FORGE_SITE_LOG" > "$FORGE_LOGS/reward.txt"\n`,
      );
      const fake = JSON.stringify({ seq: 99, method: "POST", path: "/subscribe.html", form: { email: "ada@example.com" }, query: {}, user_agent: "HeadlessChrome", status: 200 });
      const plant = [
        // Over HTTP, as the agent may: a GET through the bridged port.
        `port=\${FORGE_SITE_URL##*:}; exec 3<>/dev/tcp/127.0.0.1/$port; printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3 > got.html`,
        // Everywhere the log could be: all lost or refused.
        ...["../site/requests.jsonl", "/logs/site/requests.jsonl", `${dir}/data/rollouts/site/requests.jsonl`].map((path) => `mkdir -p "$(dirname ${path})" 2>/dev/null; echo '${fake}' >> ${path} 2>/dev/null`),
        "exit 0",
      ].join("\n");
      const experiment = experimentIn(dir, { name: "command", command: ["bash", "-c", plant] });
      const data = join(dir, "data");
      const run = await forge(["run", experiment, "--data", data, "--json", "--quiet"]);
      expect(run.code, run.err).toBe(0);
      const [outcome] = JSON.parse(run.out).outcomes;
      expect(outcome.status).toBe("ok");
      expect(outcome.reward).toBe(0);
      expect(readFileSync(join(outcome.dir, "workspace", "got.html"), "utf8")).toContain("The Daily Loom");
      const site = readFileSync(join(outcome.dir, "site", "requests.jsonl"), "utf8").trim().split("\n").map((line) => JSON.parse(line));
      expect(site.map((entry) => `${entry.method} ${entry.path}`)).toEqual(["GET /index.html"]);
      expect(existsSync(join(outcome.dir, "workspace", "..", "site", "requests.jsonl"))).toBe(true);
    },
    SLOW,
  );
});
