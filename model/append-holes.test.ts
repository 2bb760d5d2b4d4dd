/**
 * Holed texts (model/append-holes.ts): a call of a tool loop filled into its shape's text gets
 * what the template renders; a template that does not write tool results as given is rendered.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { appendedAfter, holesExact, suffixLocal, type AppendEnv } from "./append.ts";
import { HoleCache } from "./append-holes.ts";
import { compileChatTemplate } from "./chat-template.ts";
import { loadModel, QWEN3, QWEN3_CODER, type Model, type PreparedChat } from "./model.ts";
import { preprocessChat, PreprocessCache } from "./preprocess.ts";
import { HOLE_PROBES, SUFFIX_PROBES } from "./suffix-probe.ts";
import type { Tokenizer } from "./tokenizer.ts";

let qwen3: Model;
let coder: Model;
beforeAll(async () => {
  qwen3 = await loadModel(QWEN3);
  coder = await loadModel(QWEN3_CODER);
}, 60_000);

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });
const tools = [{ type: "function", function: { name: "bash", description: "Run.", parameters: { type: "object", properties: { command: { type: "string" } } } } }];

/** A tool loop's requests: each call the history so far, its last turn's results new. */
function toolLoop(results: string[][]): { messages: unknown[]; tools: unknown[] }[] {
  const messages: unknown[] = [
    { role: "system", content: "You are an agent." },
    { role: "user", content: "Go." },
  ];
  const requests: { messages: unknown[]; tools: unknown[] }[] = [];
  results.forEach((batch, turn) => {
    const calls = batch.map((_, i) => call(`c${turn}-${i}`, "bash", { command: `step ${turn}` }));
    messages.push({ role: "assistant", content: turn % 2 ? "Next." : "", tool_calls: calls });
    batch.forEach((content, i) => messages.push({ role: "tool", tool_call_id: calls[i]!.id, content }));
    requests.push({ messages: messages.slice(), tools });
  });
  return requests;
}

/** The env of `model` without holed texts: every call rendered. */
function renderedEnv(model: Model, tokenizer: Tokenizer): AppendEnv<PreparedChat> {
  return { render: model.renderPrepared, tokenizer, eosToken: "<|im_end|>", window: () => "short-no-tools" };
}

describe("holed texts", () => {
  for (const name of ["qwen3", "qwen3-coder"]) {
    test(`${name}: a tool loop's appended texts filled from the shapes' holed texts are the rendered ones`, () => {
      const model = name === "qwen3" ? qwen3 : coder;
      const results = [["one"], ["  two \n", '"three" \\ ✓'], [""], ["<tool_response>\nfour\n</tool_response>"], ["five\n"], ["six", "seven"]];
      for (const request of toolLoop(results)) {
        const prepared = model.prepare(request);
        const answer = prepared.conversation.findLastIndex((m) => m.get("role") === "assistant");
        const filled = model.appendedAfter(prepared, answer);
        const rendered = appendedAfter(prepared, answer, renderedEnv(model, model.tokenizer));
        expect(filled.text).toBe(rendered.text);
        expect(filled.ids).toEqual(rendered.ids);
      }
    });
  }

  test("a template that escapes, trims or branches on a tool result is not filled (probed false), and renders each call", () => {
    const head = "{%- for m in messages %}<|im_start|>{{ m.role }}\n";
    const tail = "<|im_end|>\n{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}";
    const writes = ["{{ m.content | tojson }}", "{{ m.content | trim }}", "{% if m.content %}{{ m.content }}{% else %}(empty){% endif %}", "{{ m.content[:40] }}"];
    for (const write of writes) {
      const template = compileChatTemplate(`${head}{%- if m.role == 'tool' %}${write}{%- else %}{{ m.content }}{%- endif %}${tail}`);
      const cache = new PreprocessCache();
      const prepare = (request: (typeof HOLE_PROBES)[number]) => ({ ...preprocessChat(request, { cache }), template });
      const env: AppendEnv<PreparedChat> = { render: (p) => template.render({ ...Object.fromEntries(p.variables), messages: p.conversation }), tokenizer: qwen3.tokenizer, eosToken: "<|im_end|>" };
      const window = suffixLocal(SUFFIX_PROBES.map(prepare), env);
      expect(window).not.toBe(false);
      expect(holesExact(HOLE_PROBES.map(prepare), env, window)).toBe(false);
    }
  });

  test("a template that writes results as given is probed true, and a later call of the same shape is not rendered", () => {
    const template = compileChatTemplate("{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}");
    const cache = new PreprocessCache();
    const prepare = (request: (typeof HOLE_PROBES)[number]) => ({ ...preprocessChat(request, { cache }), template });
    let renders = 0;
    const env: AppendEnv<PreparedChat> = { render: (p) => (renders++, template.render({ ...Object.fromEntries(p.variables), messages: p.conversation })), tokenizer: qwen3.tokenizer, eosToken: "<|im_end|>" };
    const window = suffixLocal(SUFFIX_PROBES.map(prepare), env);
    expect(holesExact(HOLE_PROBES.map(prepare), env, window)).toBe(true);
    const holes = new HoleCache();
    const withHoles = { ...env, window: () => window, holes: () => holes };
    const [first, second] = toolLoop([["a"], ["b"]]);
    renders = 0;
    expect(appendedAfter(prepare(first!), 2, withHoles).text).toBe("<|im_start|>tool\na<|im_end|><|im_start|>assistant");
    expect(renders).toBe(1);
    expect(appendedAfter(prepare(second!), 4, withHoles).text).toBe("<|im_start|>tool\nb<|im_end|><|im_start|>assistant");
    expect(renders).toBe(1);
  });

  test("the cache keeps at most its entries", () => {
    const holes = new HoleCache(2);
    for (const key of ["a", "b", "c"]) holes.set(key, false);
    expect([holes.get("a"), holes.get("b"), holes.get("c")]).toEqual([undefined, false, false]);
  });
});
