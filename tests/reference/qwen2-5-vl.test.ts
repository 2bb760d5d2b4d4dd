/**
 * The Qwen2.5-VL model directory (model/qwen2-5-vl.ts) rendered by model/ against transformers
 * 5.10.4's Qwen2_5_VLProcessor built from the same directory (the oracle in .venv/reference), on
 * a corpus of image conversations: screenshots of several sizes, several images in one turn,
 * images in user turns and in tool results, multi-turn with answers, with and without a system
 * message. For each, as vLLM hands the template the parts of a template that loops over them
 * (`{"type": "text"}`, `{"type": "image"}`, a string content as one text part):
 *
 * - the prompt text equals the processor's `apply_chat_template`;
 * - the collapsed ids (one pad per image: what a token-in chain holds) equal its tokenizer's;
 * - the expanded ids (`renderChatIds`: what the engine runs and the record holds) equal the
 *   processor's `input_ids` for those images;
 * - after each assistant turn, the collapsed prompt up to it + its text + the end-of-turn token +
 *   what `appendedAfter` writes equals the whole conversation's collapsed ids (how token-in extends
 *   a chain).
 *
 * Prints its case count.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadModel, qwen25VlSpec, type Model } from "../../model/index.ts";
import { solidPng } from "../../model/testing.ts";
import { startOracle, type Oracle } from "./oracle.ts";

const SLOW = 180_000;
let oracle: Oracle;
let model: Model;
beforeAll(async () => {
  [oracle, model] = await Promise.all([startOracle(), loadModel(qwen25VlSpec())]);
}, SLOW);
afterAll(async () => {
  await oracle?.close();
});

/** [width, height]: screenshots (desktop, laptop, phone, 4K), a small crop, a thin strip. */
const SIZES: [number, number][] = [[1280, 720], [1366, 768], [390, 844], [3840, 2160], [200, 120], [1000, 40]];
const PNGS = SIZES.map(([w, h], i) => solidPng(w, h, [30 * i, 100, 220 - 30 * i]));
const url = (i: number) => `data:image/png;base64,${PNGS[i]!.toString("base64")}`;
const img = (i: number) => ({ type: "image_url", image_url: { url: url(i) } });
const text = (t: string) => ({ type: "text", text: t });
const call = (id: string, name: string, args: object) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

type Req = { messages: any[]; add_generation_prompt?: boolean };

const CORPUS: Record<string, Req> = {
  "one screenshot, text after": { messages: [{ role: "user", content: [img(0), text("What is on the screen?")] }] },
  "text before the screenshot": { messages: [{ role: "user", content: [text("The page:"), img(1)] }] },
  "three images in one turn, interleaved": { messages: [{ role: "user", content: [text("Compare"), img(0), img(2), text("and"), img(3)] }] },
  "a system message, a phone screenshot": { messages: [{ role: "system", content: "You are a GUI agent." }, { role: "user", content: [img(2), text("Tap the search box.")] }] },
  "multi-turn: an answer, then a new screenshot": {
    messages: [
      { role: "user", content: [img(0), text("Open the catalogue.")] },
      { role: "assistant", content: "I'll click the catalogue link." },
      { role: "user", content: [text("The screen now:"), img(1)] },
    ],
  },
  "a tool result with a screenshot": {
    messages: [
      { role: "system", content: "You are a computer-use agent." },
      { role: "user", content: "Reserve the first book." },
      { role: "assistant", content: "<tool_call>\n{\"name\": \"click\", \"arguments\": {\"x\": 10, \"y\": 20}}\n</tool_call>" },
      { role: "tool", tool_call_id: "c1", content: [text("clicked"), img(4)] },
    ],
  },
  "tool results, two screenshots each, over several turns": {
    messages: [
      { role: "user", content: [img(0), text("Fill the booking form.")] },
      { role: "assistant", content: "Typing the name." },
      { role: "tool", content: [img(1), img(5)] },
      { role: "assistant", content: "Submitting." },
      { role: "tool", content: [text("submitted"), img(3), text("confirmation:"), img(2)] },
    ],
  },
  "the same screenshot twice": { messages: [{ role: "user", content: [img(4), text("before"), img(4), text("after")] }] },
  "no generation prompt": { messages: [{ role: "user", content: [img(0), text("Describe.")] }, { role: "assistant", content: "A blue page." }], add_generation_prompt: false },
  "a text-only conversation": { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }, { role: "assistant", content: "hello" }, { role: "user", content: "bye" }] },
  "assistant tool calls as fields, then a screenshot": {
    messages: [
      { role: "user", content: [img(1), text("Search for Dune.")] },
      { role: "assistant", content: "Searching.", tool_calls: [call("c1", "type_text", { text: "Dune" })] },
      { role: "tool", tool_call_id: "c1", content: [img(0)] },
      { role: "user", content: [text("And now?"), img(2)] },
    ],
  },
};

/** The messages vLLM hands a template that loops over content (content format "openai"), written independently of model/. */
function hfMessages(req: Req): any[] {
  return req.messages.map((m) => {
    const parts = m.content == null ? [] : typeof m.content === "string" ? [text(m.content)] : m.content;
    const out: Record<string, unknown> = { role: m.role, content: parts.map((p: any) => (p.type === "image_url" ? { type: "image" } : { type: "text", text: p.text })) };
    return out;
  });
}

/** The base64 of every image of a request, in order. */
const imagesOf = (req: Req) => req.messages.flatMap((m) => (Array.isArray(m.content) ? m.content.filter((p: any) => p.type === "image_url").map((p: any) => p.image_url.url.split(",")[1]) : []));

describe("Qwen2.5-VL: model/ renders as transformers' Qwen2_5_VLProcessor", () => {
  let cases = 0;
  afterAll(() => console.log(`qwen2.5-vl suite: ${cases} cases (text, collapsed ids, expanded ids, appended renderings) equal transformers' Qwen2_5_VLProcessor, 100 %`));

  test(`${Object.keys(CORPUS).length} conversations: text, collapsed and expanded ids`, async () => {
    const names = Object.keys(CORPUS);
    const answer = await oracle.call({ op: "qwen_vl_render", dir: model.spec.dir, conversations: names.map((n) => ({ messages: hfMessages(CORPUS[n]!), images: imagesOf(CORPUS[n]!), add_generation_prompt: CORPUS[n]!.add_generation_prompt ?? true })) });
    expect(answer.error).toBeUndefined();
    names.forEach((name, i) => {
      const want = answer.renderings[i];
      const req = CORPUS[name]!;
      const rendered = model.renderChat(req as never);
      expect({ name, text: rendered }).toEqual({ name, text: want.text });
      expect({ name, collapsed: model.tokenizer.encode(rendered) }).toEqual({ name, collapsed: want.collapsed });
      expect({ name, expanded: model.renderChatIds(req as never) }).toEqual({ name, expanded: want.expanded });
      cases += 3;
    });
  }, SLOW);

  test("after each assistant turn: prompt + answer + end of turn + appendedAfter = the whole conversation's collapsed ids", () => {
    for (const [name, req] of Object.entries(CORPUS)) {
      if (req.add_generation_prompt === false) continue;
      const whole = model.tokenizer.encode(model.renderChat(req as never));
      const prepared = model.prepare(req as never);
      req.messages.forEach((m, i) => {
        if (m.role !== "assistant" || m.tool_calls) return;
        const before = model.tokenizer.encode(model.renderChat({ messages: req.messages.slice(0, i) } as never));
        const answer = model.tokenizer.encode(m.content);
        const appended = model.appendedAfter(prepared, i);
        expect({ name, at: i, ids: [...before, ...answer, appended.closerId, ...appended.ids] }).toEqual({ name, at: i, ids: whole });
        cases++;
      });
    }
  });
});
