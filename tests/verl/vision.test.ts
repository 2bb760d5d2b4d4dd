/**
 * The veRL suite's vision part: Qwen2.5-VL image rollouts recorded through the proxy and the
 * policy simulator (which expands each image into its `<|image_pad|>` run as vLLM's processor
 * does, Qwen2.5-VL's sizes), exported with `forge export --format verl`, and handed by
 * ForgeAgentLoop to veRL 0.9.1's own vision path (integrations/verl/tests/test_vision.py): the
 * Qwen2.5-VL processor veRL's `hf_processor` builds (its `get_rope_index` bound as veRL binds
 * it), then the V1 worker's `_compute_multi_modal_inputs` and `_compute_position_ids` on every
 * output. Screenshots of three sizes, one resent, several per turn, in user turns and after tool
 * results; one size (1920×1080) past Qwen2-VL's max_pixels, so a processor with the wrong
 * preprocessor config is caught.
 */
import { afterAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { scratchDir } from "../../records/testing.ts";
import { exportTrajectories, trajectoryOf } from "../../trajectories/index.ts";
import { QWEN3_THINK } from "../../trajectories/testing.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { tokenInOptions } from "../../proxy/index.ts";
import { solidPng } from "../../model/testing.ts";
import { oraclePython } from "../reference/oracle.ts";

const scratch = scratchDir("forge-verl-vision-");
afterAll(() => scratch.cleanup());
const ROOT = join(import.meta.dir, "..", "..");

/** The screenshots: a 1280×720 page (1,196 image tokens), a 1920×1080 one (past Qwen2-VL's max_pixels) and a 640×480 dialog. */
const SHOTS = {
  page: solidPng(1280, 720, [30, 90, 200]),
  full: solidPng(1920, 1080, [20, 160, 60]),
  dialog: solidPng(640, 480, [200, 40, 40]),
};
const url = (png: Buffer) => `data:image/png;base64,${png.toString("base64")}`;
const image = (png: Buffer) => ({ type: "image_url", image_url: { url: url(png) } });
const sha = (png: Buffer) => createHash("sha256").update(png).digest("hex");

const TOOLS = [{ type: "function", function: { name: "browser_take_screenshot", description: "Take a screenshot", parameters: { type: "object", properties: {} } } }];

/**
 * One GUI-shaped rollout through the proxy (Chat, as the front doors hand the engine a
 * harness's screenshots): a user turn with a screenshot, a tool call whose result is followed
 * by the user turn holding its image (what the translators make of a tool-result image), then
 * a turn with two images, one of them resent.
 */
async function imageRollout(h: ProxyHarness, group: string, reward: number): Promise<string> {
  const r = await h.register({ task_id: "gui-task", group, experiment: "verl-vision" });
  const client = h.client(r);
  const messages: any[] = [{ role: "system", content: "You drive a browser." }, { role: "user", content: [{ type: "text", text: "Subscribe to the newsletter." }, image(SHOTS.page)] }];
  const ask = async () => {
    const c = await client.chat.completions.create({ model: "m", messages, tools: TOOLS as any, temperature: 1 });
    const m = c.choices[0]!.message;
    messages.push({ role: "assistant", content: m.content ?? "", ...(m.tool_calls?.length ? { tool_calls: m.tool_calls } : {}) });
    return m;
  };
  const first = await ask();
  const callId = first.tool_calls?.[0]?.id;
  if (callId) messages.push({ role: "tool", tool_call_id: callId, content: "Took the screenshot." });
  messages.push({ role: "user", content: [{ type: "text", text: "The screenshot:" }, image(SHOTS.full)] });
  await ask();
  messages.push({ role: "user", content: [{ type: "text", text: "A dialog opened; the page behind it:" }, image(SHOTS.dialog), image(SHOTS.page)] });
  await ask();
  const done = await h.control(`/control/rollouts/${r.rollout_id}/finish`, { reward, status: "ok" });
  expect(done.status).toBe(200);
  return r.rollout_id;
}

async function runVisionSuite(setupPath: string): Promise<{ code: number; out: string }> {
  const python = oraclePython(); // throws naming python/build-env.sh when the venv is missing: never a skip
  const proc = Bun.spawn([python, "-m", "unittest", "-v", "tests.test_vision"], {
    cwd: join(ROOT, "integrations", "verl"),
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1", FORGE_TEST_VISION_SETUP: setupPath },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const out = `${stdout}\n${stderr}`;
  if (code !== 0) console.error(out.slice(-20000));
  return { code, out };
}

test("veRL suite (vision): recorded Qwen2.5-VL image samples through veRL 0.9.1's processor and get_rope_index", async () => {
  const modes: { name: string; dataDir: string; rollouts: string[] }[] = [];
  // Engine mode (the engine renders each prompt), and token-in mode (the proxy renders, the
  // engine's generate route expands the images: vLLM's /inference/v1/generate, SGLang's /generate).
  const harnesses: { [name: string]: ProxyHarness } = {
    engine: await startProxyHarness({ proxy: { mode: "train" } }),
    "token-in vllm": await startProxyHarness({ proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } }),
    "token-in sglang": await startProxyHarness({ sim: { engine: "sglang" }, proxy: { mode: "train", engine: "sglang", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } }),
  };
  try {
    for (const [name, h] of Object.entries(harnesses)) modes.push({ name, dataDir: h.dataDir, rollouts: [await imageRollout(h, "gv", 1)] });
    // Token-in: one sample per rollout, 0 drift (docs/token-in.md); engine mode forks here.
    for (const m of modes.filter((m) => m.name.startsWith("token-in"))) {
      for (const id of m.rollouts) {
        const t = (await trajectoryOf(readRecords(m.dataDir), id, QWEN3_THINK))!;
        expect({ mode: m.name, samples: t.samples.length, drift: t.stats.drift_tokens }).toEqual({ mode: m.name, samples: 1, drift: 0 });
      }
    }
    const batches: { name: string; batch: string; rollouts: { [id: string]: unknown } }[] = [];
    for (const m of modes) {
      const batch = join(scratch.dir, `${m.name}.parquet`);
      const manifest = await exportTrajectories(readRecords(m.dataDir), { format: "verl", out: batch, minGroupSize: 1, experiment: "verl-vision", iteration: 0 });
      expect(manifest.images.blobs_missing).toBe(0);
      const rollouts: { [id: string]: unknown } = {};
      for (const id of m.rollouts) rollouts[id] = await trajectoryOf(readRecords(m.dataDir), id);
      batches.push({ name: m.name, batch, rollouts });
    }
    const setup = {
      batches,
      sizes: Object.fromEntries(Object.values(SHOTS).map((png) => [sha(png), [png.readUInt32BE(16), png.readUInt32BE(20)]])),
      order: [sha(SHOTS.page), sha(SHOTS.full), sha(SHOTS.dialog), sha(SHOTS.page)],
    };
    const setupPath = join(scratch.dir, "vision-setup.json");
    writeFileSync(setupPath, JSON.stringify(setup));
    const { code, out } = await runVisionSuite(setupPath);
    expect(out).not.toContain("skipped");
    expect(out).toMatch(/veRL suite \(veRL 0\.9\.1\): \d+ cases checked/);
    console.log(out.match(/veRL suite.*$/m)![0]);
    expect(out).toContain("OK");
    expect(code).toBe(0);
  } finally {
    for (const h of Object.values(harnesses)) await h.close();
  }
}, 600_000);
