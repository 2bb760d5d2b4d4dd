import { beforeAll, describe, expect, test } from "bun:test";
import { renderChatSegments } from "./chatml.ts";
import { generate } from "./generate.ts";
import { encodeSegments } from "./prompt-tokens.ts";
import { loadTokenizer, IM_END, type SimTokenizer } from "./tokenizer.ts";
import type { SimMessage, SimTool } from "./types.ts";
import casesJson from "./fixtures/qwen3-template-cases.json";
import expectedJson from "./fixtures/qwen3-template-expected.json";

let tokenizer: SimTokenizer;
beforeAll(async () => {
  tokenizer = await loadTokenizer();
}, 30_000);

const bash: SimTool = { type: "function", function: { name: "bash", description: "Run", parameters: { type: "object", properties: { command: { type: "string" } } } } };

describe("Qwen3 ChatML rendering", () => {
  test("real Qwen3 ids", () => {
    expect(tokenizer.encode("Hello")).toEqual([9707]);
    expect(tokenizer.encode("<|im_start|>")).toEqual([151644]);
    const ids = encodeSegments(tokenizer, renderChatSegments([{ role: "user", content: "Hello" }]));
    expect(ids).toEqual([151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]);
  });

  test("tools go into the system prompt as Qwen3 writes them (Python-style JSON)", () => {
    const text = renderChatSegments([{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], [bash]).join("");
    expect(text).toStartWith("<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions");
    expect(text).toContain('<tools>\n{"type": "function", "function": {"name": "bash", "description": "Run", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}\n</tools>');
    expect(text).toContain("</tool_call><|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  });

  test("assistant tool calls, grouped tool responses in one user turn, developer as system", () => {
    const messages: SimMessage[] = [
      { role: "developer", content: "dev rules" },
      { role: "user", content: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: "data:," } }] },
      { role: "assistant", content: "Sure.", tool_calls: [{ id: "a", function: { name: "bash", arguments: '{"command": "ls"}' } }, { id: "b", function: { name: "bash", arguments: { command: "pwd" } } }] },
      { role: "tool", tool_call_id: "a", content: "f1" },
      { role: "tool", tool_call_id: "b", content: "/w" },
    ];
    expect(renderChatSegments(messages).join("")).toBe(
      "<|im_start|>system\ndev rules<|im_end|>\n" +
        "<|im_start|>user\nlook\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n" +
        '<|im_start|>assistant\nSure.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>\n<tool_call>\n{"name": "bash", "arguments": {"command": "pwd"}}\n</tool_call><|im_end|>\n' +
        "<|im_start|>user\n<tool_response>\nf1\n</tool_response>\n<tool_response>\n/w\n</tool_response><|im_end|>\n" +
        "<|im_start|>assistant\n",
    );
  });

  test("enable_thinking=false opens the answer with an empty think block", () => {
    expect(renderChatSegments([{ role: "user", content: "x" }], [], { enableThinking: false }).join("")).toEndWith("<|im_start|>assistant\n<think>\n\n</think>\n\n");
  });

  test("think blocks of turns before the last user query are stripped; later ones are kept only if sent back", () => {
    const thought = { reasoning: "Let me think.", content: "Answer one.", toolCalls: [] };
    const g = generate(tokenizer, thought, undefined);
    const history: SimMessage[] = [{ role: "user", content: "q1" }];
    const prompt1 = encodeSegments(tokenizer, renderChatSegments(history));
    // Reasoning sent back (reasoning_content) within the same query: exact prefix.
    const sameQuery: SimMessage[] = [...history, { role: "assistant", content: "Answer one.", reasoning_content: "Let me think." }, { role: "tool", content: "r" }];
    const prompt2 = encodeSegments(tokenizer, renderChatSegments(sameQuery));
    expect(prompt2.slice(0, prompt1.length + g.ids.length)).toEqual([...prompt1, ...g.ids]);
    // Not sent back, or a new user query: the think block is gone, so the prompt drifts.
    const dropped = encodeSegments(tokenizer, renderChatSegments([...history, { role: "assistant", content: "Answer one." }, { role: "tool", content: "r" }]));
    expect(dropped.slice(0, prompt1.length + g.ids.length)).not.toEqual([...prompt1, ...g.ids]);
    const newQuery = renderChatSegments([...history, { role: "assistant", content: "<think>\nLet me think.\n</think>\n\nAnswer one." }, { role: "user", content: "q2" }]).join("");
    expect(newQuery).toContain("<|im_start|>assistant\nAnswer one.<|im_end|>");
  });

  test("a sampled tool-call turn re-renders to the same tokens (prefix property)", () => {
    const turn = { content: "Running it.", toolCalls: [{ name: "bash", arguments: '{"command": "echo héllo > a.txt"}' }] };
    const g = generate(tokenizer, turn, undefined);
    expect(g.ids.at(-1)).toBe(IM_END);
    const history: SimMessage[] = [{ role: "user", content: "go" }];
    const p1 = encodeSegments(tokenizer, renderChatSegments(history, [bash]));
    const p2 = encodeSegments(
      tokenizer,
      renderChatSegments([...history, { role: "assistant", content: "Running it.", tool_calls: [{ id: "x", function: { name: "bash", arguments: turn.toolCalls[0]!.arguments } }] }, { role: "tool", content: "" }], [bash]),
    );
    expect(p2.slice(0, p1.length + g.ids.length)).toEqual([...p1, ...g.ids]);
  });
});

describe("against Qwen3's real chat template", () => {
  // Expected strings rendered by jinja2 from the tokenizer package's chat_template
  // (fixtures/render-qwen3-template.py): system/tools, think stripping, grouped tool
  // responses, dict arguments, a late system turn, a prefilled assistant turn.
  const cases = casesJson as unknown as { messages: SimMessage[]; tools: SimTool[]; gen?: boolean }[];
  const expected = expectedJson as string[];
  test.each(cases.map((c, i) => [i, c] as const))("case %d renders exactly as the template does", (i, c) => {
    expect(renderChatSegments(c.messages, c.tools, { addGenerationPrompt: c.gen ?? true }).join("")).toBe(expected[i]!);
  });
});
