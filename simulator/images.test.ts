/**
 * The generate routes with images: SGLang's `/generate` with `image_data` and vLLM's
 * `/inference/v1/generate` with `content_parts` expand each pad of the ids to the image's tokens
 * and echo the prompt they ran; on a pad/image count mismatch SGLang falls back to decode +
 * re-tokenize (a drift, logged) and vLLM refuses; vLLM without --enable-scale-out answers 403.
 */
import { beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createPolicySimulator } from "./app.ts";
import { loadTokenizer } from "./model.ts";
import { imageTokenCount, loadModel, QWEN2_5_VL_PROCESSOR, QWEN3, type Model } from "../model/index.ts";
import { solidPng } from "../model/testing.ts";

setDefaultTimeout(60_000);

const PAD = 151655;
const shot = (w: number, h: number) => `data:image/png;base64,${solidPng(w, h).toString("base64")}`;
const images = [shot(1280, 720), shot(390, 844)];
const counts = [imageTokenCount(720, 1280, QWEN2_5_VL_PROCESSOR), imageTokenCount(844, 390, QWEN2_5_VL_PROCESSOR)];
const lines: string[] = [];
const sglang = createPolicySimulator({ seed: 4, engine: "sglang", log: (l) => lines.push(l) });
const vllm = createPolicySimulator({ seed: 4 });
let model: Model;
let collapsed: number[];
beforeAll(async () => {
  model = await loadModel(QWEN3);
  await loadTokenizer();
  const placeholder = "<|vision_start|><|image_pad|><|vision_end|>";
  collapsed = model.tokenizer.encode(`<|im_start|>user\n${placeholder}\n${placeholder}\nWhat is on the screens?<|im_end|>\n<|im_start|>assistant\n`);
});

const post = (sim: ReturnType<typeof createPolicySimulator>, path: string, body: unknown) =>
  sim.fetch(new Request(`http://sim${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));

/** `ids` with the i-th pad repeated counts[i] times. */
const expand = (ids: number[], n: number[]) => {
  let i = 0;
  return ids.flatMap((id) => (id === PAD ? Array<number>(n[i++]!).fill(PAD) : [id]));
};

describe("SGLang 0.5.23 /generate with image_data", () => {
  test("one pad per image: the ids kept verbatim, each pad expanded; the prompt it ran echoed and counted", async () => {
    const res = await post(sglang, "/generate", { input_ids: collapsed, image_data: images, sampling_params: { max_new_tokens: 16 }, return_prompt_token_ids: true });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.prompt_token_ids).toEqual(expand(collapsed, counts));
    expect(body.meta_info.prompt_tokens).toBe(collapsed.length - 2 + counts[0]! + counts[1]!);
  });

  test("a pad/image count mismatch falls back to decode + re-tokenize: the prompt drifts, and the simulator logs SGLang's warning", async () => {
    // The second pad spelled in ordinary tokens: 1 pad in the ids for 2 images; the decoded text holds 2.
    const at = collapsed.lastIndexOf(PAD);
    const textPad = ["<|", "image", "_pad", "|>"].flatMap((piece) => model.tokenizer.encode(piece)); // "<|image_pad|>" in ordinary tokens
    expect(model.tokenizer.decode(textPad)).toBe("<|image_pad|>");
    const ids = [...collapsed.slice(0, at), ...textPad, ...collapsed.slice(at + 1)];
    lines.length = 0;
    const res = await post(sglang, "/generate", { input_ids: ids, image_data: images, sampling_params: { max_new_tokens: 16 }, return_prompt_token_ids: true });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    expect(body.prompt_token_ids).toEqual(expand(collapsed, counts));
    expect(body.prompt_token_ids.length).not.toBe(ids.length - 1 + counts[0]!);
    expect(lines.some((l) => /falling back to decode\+retokenize, which may change prompt length \(token drift\)/.test(l))).toBe(true);
  });

  test("more pads than images even after re-tokenizing: refused", async () => {
    const res = await post(sglang, "/generate", { input_ids: collapsed, image_data: images.slice(0, 1), sampling_params: { max_new_tokens: 4 } });
    expect(res.status).toBe(400);
  });
});

describe("vLLM 0.33.0 /inference/v1/generate with content_parts", () => {
  test("each pad expanded; prompt_token_ids and mm_placeholders on return_token_ids; usage counts the expanded prompt", async () => {
    const res = await post(vllm, "/inference/v1/generate", { token_ids: collapsed, content_parts: images.map((url) => ({ type: "image_url", url })), sampling_params: { max_tokens: 16, logprobs: 0 }, return_token_ids: true });
    expect(res.status).toBe(200);
    const body = (await res.json()) as any;
    const expanded = expand(collapsed, counts);
    expect(body.prompt_token_ids).toEqual(expanded);
    const first = expanded.indexOf(PAD);
    expect(body.mm_placeholders).toEqual({ image: [{ offset: first, length: counts[0] }, { offset: expanded.indexOf(PAD, first + counts[0]!), length: counts[1] }] });
    expect(body.usage.prompt_tokens).toBe(expanded.length);
    const choice = body.choices[0];
    expect(choice.logprobs.content.map((r: any) => r.token_id)).toEqual(choice.token_ids);
    expect(body.output_mode).toBe("tokens");
  });

  test("streamed: the prompt on the first chunk only, the new token_ids per chunk, a usage chunk, [DONE]", async () => {
    const res = await post(vllm, "/inference/v1/generate", { token_ids: collapsed, content_parts: images.map((url) => ({ type: "image_url", url })), sampling_params: { max_tokens: 8 }, return_token_ids: true, stream: true, stream_options: { include_usage: true } });
    const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e));
    expect(chunks[0].prompt_token_ids).toEqual(expand(collapsed, counts));
    expect(chunks.slice(1).some((c: any) => "prompt_token_ids" in c)).toBe(false);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expand(collapsed, counts).length } });
  });

  test("a pad/image count mismatch is refused (no fallback); features with content_parts, or no sampling_params, are invalid", async () => {
    const parts = images.slice(0, 1).map((url) => ({ type: "image_url", url }));
    const mismatch = await post(vllm, "/inference/v1/generate", { token_ids: collapsed, content_parts: parts, sampling_params: {} });
    expect(mismatch.status).toBe(400);
    expect(((await mismatch.json()) as any).error.message).toMatch(/Expected there to be 1 prompt placeholders corresponding to 1 image items, but instead found 2/);
    const both = await post(vllm, "/inference/v1/generate", { token_ids: collapsed, content_parts: parts, features: { mm_hashes: {}, mm_placeholders: {} }, sampling_params: {} });
    expect(both.status).toBe(400);
    const none = await post(vllm, "/inference/v1/generate", { token_ids: collapsed });
    expect(none.status).toBe(400);
  });

  test("a text prompt, nothing decoded (detokenize false): ids and the finished output's weight version spans; stop strings without detokenize refused, as vLLM's SamplingParams refuses them", async () => {
    const text = (await loadTokenizer()).encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
    const ok = (await (await post(vllm, "/inference/v1/generate", { token_ids: text, sampling_params: { max_tokens: 8, detokenize: false } })).json()) as any;
    expect(ok.choices[0].token_ids.length).toBeGreaterThan(0);
    expect(ok.choices[0].weight_versions).toEqual([{ version: "default", start: 0, end: ok.choices[0].token_ids.length }]);
    const refused = await post(vllm, "/inference/v1/generate", { token_ids: text, sampling_params: { max_tokens: 8, detokenize: false, stop: ["</answer>"] } });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as any).error.message).toContain("stop strings are only supported when detokenize is True");
  });

  test("without --enable-scale-out the route answers 403, as vLLM does", async () => {
    const off = createPolicySimulator({ seed: 4, enableScaleOut: false });
    const res = await post(off, "/inference/v1/generate", { token_ids: collapsed, sampling_params: {} });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.message).toMatch(/--enable-scale-out/);
  });
});
