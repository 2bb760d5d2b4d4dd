/**
 * Token-in mode with images (docs/token-in.md, "Images") through the real proxy against the
 * policy simulator in both engine flavours: SGLang 0.5.23's `/generate` (`input_ids` +
 * `image_data`) and vLLM 0.33.0's `/inference/v1/generate` (`token_ids` + `content_parts`).
 *
 * - a tool loop whose user turn and tool results carry screenshots of several sizes (two in one
 *   turn): the engine gets every image so far, in placeholder order, with one pad per image in
 *   the ids; the prompt it ran (expanded) begins with exactly the previous prompt + completion;
 *   each call is recorded as an engine-mode image call is (the expanded prompt, the request's
 *   images), chained, COMPLETE; the trajectory is one sample with 0 drift and the images in order;
 * - a restart: the chain comes back from the records (collapsed again) and the next call continues it;
 * - an engine that sizes images otherwise (its processor's max_pixels): the call is PARTIAL with the reason;
 * - refusals naming what is missing: vLLM without --enable-scale-out, a model directory whose image
 *   processor model/ does not implement, a text model.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tokenInOptions } from "../proxy/index.ts";
import { resolvePrompts, startProxyHarness, type ProxyHarness } from "../proxy/testing.ts";
import { imageTokenCount, QWEN2_5_VL_PROCESSOR, QWEN3 } from "../model/index.ts";
import { solidPng } from "../model/testing.ts";
import { ChainStart, TokenMode, TokenStatus } from "../schemas/index.ts";
import { readRecords } from "../records/index.ts";
import { trajectoryOf } from "../trajectories/index.ts";
import { chatCall, echo, expectOneSample, samplesOf, startsWith, STOCK_TASK, STOCK_TOOLS, type Answer } from "./token-in-calls.ts";

const SLOW = 120_000;
const PAD = 151655;
const script = { thinking: true, tasks: [STOCK_TASK] };

/** [width, height] of the screenshots: a desktop, a 4:3 window, a phone. */
const SIZES: [number, number][] = [[1280, 720], [800, 600], [390, 844], [1366, 768], [640, 480]];
const shots = SIZES.map(([w, h], i) => `data:image/png;base64,${solidPng(w, h, [20 * i, 90, 200 - 20 * i]).toString("base64")}`);
const tokensOf = (i: number) => imageTokenCount(SIZES[i]![1], SIZES[i]![0], QWEN2_5_VL_PROCESSOR);
const image = (i: number) => ({ type: "image_url", image_url: { url: shots[i]! } });

type Msg = Record<string, unknown>;

/** Runs the stock task with screenshots: two in the user turn, one in each tool result (as a tool message's parts, or a user turn after it). */
async function imageLoop(h: ProxyHarness, r: any, calls: number, firstStream = false): Promise<{ messages: Msg[]; answers: Answer[]; images: number[] }> {
  const messages: Msg[] = [
    { role: "system", content: "You are a computer-use agent." },
    { role: "user", content: [image(0), image(1), { type: "text", text: "stock.csv lists items and counts. Write the total to total.txt." }] },
  ];
  const images = [0, 1];
  const answers: Answer[] = [];
  for (let i = 0; i < calls; i++) {
    const a = await chatCall(h, r, { model: "qwen3", tools: STOCK_TOOLS, messages }, i % 2 === (firstStream ? 0 : 1));
    answers.push(a);
    messages.push(echo(a) as Msg);
    for (const c of a.toolCalls) {
      const shot = 2 + (i % 3);
      if (i % 2 === 0) messages.push({ role: "tool", tool_call_id: c.id, content: [{ type: "text", text: "done; the screen:" }, image(shot)] });
      else messages.push({ role: "tool", tool_call_id: c.id, content: "done" }, { role: "user", content: [{ type: "text", text: "The screen now:" }, image(shot)] });
      images.push(shot);
    }
    if (a.toolCalls.length === 0) break;
  }
  return { messages, answers, images };
}

for (const engine of ["vllm", "sglang"] as const) {
  describe(`token-in with images, ${engine} flavour`, () => {
    let h: ProxyHarness;
    const routes: string[] = [];
    beforeAll(async () => {
      h = await startProxyHarness({ sim: { script, engine, log: (line) => routes.push(line) }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
    });
    afterAll(async () => {
      await h?.close();
    });

    test(
      "screenshots in user turns and tool results: the engine runs prompt n + completion n + the new messages, expanded; one sample, 0 drift, the images in order",
      async () => {
        const r = await h.register({ task_id: "gui" });
        const { answers } = await imageLoop(h, r, 5);
        expect(answers.map((a) => a.toolCalls.map((c) => c.name))).toEqual([["read"], ["bash"], ["write"], ["bash"], []]);
        expect(routes.filter((l) => l.includes(engine === "vllm" ? "/inference/v1/generate" : "/generate ")).length).toBe(5);

        // At the engine: each prompt expanded (one run of pads per image, its token count), and
        // beginning with exactly the previous prompt and completion.
        const samples = samplesOf(h, r.rollout_id);
        expect(samples.length).toBe(5);
        const imagesAt = [[0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 2]];
        samples.forEach((s, i) => expect(padRuns(s.prompt_token_ids)).toEqual(imagesAt[i]!.map(tokensOf)));
        for (let i = 1; i < samples.length; i++) {
          const held = [...samples[i - 1]!.prompt_token_ids, ...samples[i - 1]!.token_ids];
          expect(startsWith(samples[i]!.prompt_token_ids, held)).toBe(true);
        }

        // Recorded as an engine-mode image call is: the prompt the engine ran, COMPLETE, one chain.
        const calls = await h.calls(r.rollout_id);
        const prompts = resolvePrompts(calls);
        calls.forEach((c, i) => {
          expect(c.tokenMode).toBe(TokenMode.TOKEN_IN);
          expect({ status: c.tokenStatus, reason: c.tokenStatusReason }).toEqual({ status: TokenStatus.COMPLETE, reason: "" });
          expect(prompts.get(c.callId)).toEqual(samples[i]!.prompt_token_ids);
          expect(c.completionTokenIds).toEqual(samples[i]!.token_ids);
          expect(c.chainStart).toBe(i === 0 ? ChainStart.FIRST : ChainStart.UNSPECIFIED);
          if (i > 0) expect(c.chainParent).toBe(calls[i - 1]!.callId);
          // The engine request the record keeps holds neither the ids nor the images (the token view and the request hold them).
          const sent = JSON.parse(new TextDecoder().decode(c.engineRequest));
          expect(Object.keys(sent).filter((k) => ["token_ids", "input_ids", "content_parts", "image_data"].includes(k))).toEqual([]);
        });
        // Rendered: the first call whole; later ones only what they appended (one pad per new image).
        expect(calls[1]!.renderedTokens).toBeLessThan(100);

        await expectOneSample(h, r.rollout_id, samples);
        const t = (await trajectoryOf(readRecords(h.dataDir), r.rollout_id, { thinkOpen: 151667, thinkClose: 151668, thinkTrailing: [198, 271] }))!;
        expect(t.samples[0]!.blob_refs.length).toBe(5);
      },
      SLOW,
    );

    test(
      "after a restart the chain comes back from the records (one pad per image again) and the next call continues it",
      async () => {
        const r = await h.register({ task_id: "gui-restart" });
        const { messages } = await imageLoop(h, r, 2);
        await h.restart();
        await chatCall(h, r, { model: "qwen3", tools: STOCK_TOOLS, messages }, false);
        const calls = await h.calls(r.rollout_id);
        const last = calls.at(-1)!;
        expect({ start: last.chainStart, parent: last.chainParent, status: last.tokenStatus }).toEqual({ start: ChainStart.UNSPECIFIED, parent: calls[1]!.callId, status: TokenStatus.COMPLETE });
        const samples = samplesOf(h, r.rollout_id);
        expect(startsWith(samples[2]!.prompt_token_ids, [...samples[1]!.prompt_token_ids, ...samples[1]!.token_ids])).toBe(true);
      },
      SLOW,
    );
  });
}

describe("token-in with images: what does not fit", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  for (const engine of ["vllm", "sglang"] as const) {
    test(
      `${engine}: an engine that sizes images otherwise runs another prompt: the call is PARTIAL with the reason, not a silent drift`,
      async () => {
        const h = await startProxyHarness({ sim: { script, engine, imageProcessor: { ...QWEN2_5_VL_PROCESSOR, maxPixels: 512 * 28 * 28 } }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
        try {
          const r = await h.register({ task_id: "gui-mismatch" });
          await imageLoop(h, r, 1);
          const [call] = await h.calls(r.rollout_id);
          const sample = samplesOf(h, r.rollout_id)[0]!;
          expect(call!.tokenStatus).toBe(TokenStatus.PARTIAL);
          expect(call!.tokenStatusReason).toMatch(/^the engine ran a prompt of \d+ tokens, the proxy's expansion of its images has \d+/);
          // What is recorded is what the engine ran.
          expect(resolvePrompts([call!]).get(call!.callId)).toEqual(sample.prompt_token_ids);
        } finally {
          await h.close();
        }
      },
      SLOW,
    );
  }

  test(
    "vLLM without --enable-scale-out: the call fails naming the route and the flag",
    async () => {
      const h = await startProxyHarness({ sim: { script, engine: "vllm", enableScaleOut: false }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
      try {
        const r = await h.register({ task_id: "gui-no-route" });
        const error = await imageLoop(h, r, 1).catch((e) => e);
        expect(error.status).toBe(502);
        expect(error.message).toMatch(/403 at \/inference\/v1\/generate.*--enable-scale-out/);
        // A text call still goes to /v1/completions.
        const a = await chatCall(h, r, { model: "qwen3", tools: STOCK_TOOLS, messages: [{ role: "user", content: "stock.csv lists items and counts. Write the total to total.txt." }] }, false);
        expect(a.toolCalls.map((c) => c.name)).toEqual(["read"]);
      } finally {
        await h.close();
      }
    },
    SLOW,
  );

  test(
    "a model directory whose image processor model/ does not implement, and a text model: refused (400) naming what is missing",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "forge-vl-"));
      dirs.push(dir);
      for (const f of ["tokenizer.json", "tokenizer_config.json"]) copyFileSync(join(QWEN3.dir, f), join(dir, f));
      writeFileSync(join(dir, "preprocessor_config.json"), JSON.stringify({ image_processor_type: "SiglipImageProcessor", patch_size: 14 }));
      for (const [modelDir, pattern] of [
        [dir, /model\/ does not implement .*SiglipImageProcessor .*preprocessor_config\.json.*Qwen2VLImageProcessor/],
        ["qwen3-coder", /not a multimodal model: the model directory token-in mode renders with has no image processor/],
      ] as const) {
        const h = await startProxyHarness({ sim: { script, engine: "sglang" }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir }) } });
        try {
          const r = await h.register({ task_id: "gui-refused" });
          const error = await imageLoop(h, r, 1).catch((e) => e);
          expect(error.status).toBe(400);
          expect(error.message).toMatch(pattern);
          expect(samplesOf(h, r.rollout_id)).toEqual([]);
        } finally {
          await h.close();
        }
      }
    },
    SLOW,
  );
});

/** The length of each run of image pads in `ids`. */
function padRuns(ids: readonly number[]): number[] {
  const runs: number[] = [];
  for (let i = 0; i < ids.length; i++) {
    if (ids[i] !== PAD) continue;
    if (ids[i - 1] === PAD) runs[runs.length - 1]!++;
    else runs.push(1);
  }
  return runs;
}
