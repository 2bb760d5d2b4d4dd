/**
 * The simulator standing in for a server started with `--tool-call-parser qwen3_coder`
 * (Qwen3-Coder's chat template, XML tool calls, no reasoning parser): the sampled text is the
 * XML the template renders for the turn, the chat route parses it with vLLM's qwen3_coder parser
 * (streamed and not), and the raw routes read the XML tools block back from a rendered prompt.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { loadModel, QWEN3_CODER } from "../model/index.ts";
import { createPolicySimulator } from "./app.ts";
import { type SimSample } from "./types.ts";
import { policySimCommand } from "./cli.ts";
import { chatPrompt, xmlTools } from "./completions.ts";
import { modelText } from "./generate.ts";

setDefaultTimeout(60_000);

const tools = [
  { type: "function", function: { name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string", description: "The path" } }, required: ["path"] } } },
  { type: "function", function: { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } } },
  { type: "function", function: { name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" }, timeout: { type: "integer", minimum: 1 } }, required: ["command"] } } },
];
const script = {
  thinking: true,
  tasks: [
    {
      name: "notes",
      match: "notes.md",
      steps: [
        { think: "ignored: the model does not think", say: "  I'll write it.  ", write: { path: "notes.md", content: "line 1\n  indented\n" } },
        { tool: { name: "bash", arguments: { command: "wc -l notes.md", timeout: 5 } } },
        { finish: "notes.md has two lines." },
      ],
    },
  ],
};
const user = { role: "user", content: "Write notes.md with two lines." };
const post = (sim: ReturnType<typeof createPolicySimulator>, path: string, body: unknown) =>
  sim.fetch(new Request(`http://sim${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));

describe("the simulator as a qwen3_coder server", () => {
  test("samples Qwen3-Coder's XML exactly as its template renders the turn; the chat answer is what vLLM's qwen3_coder parser reads", async () => {
    const sim = createPolicySimulator({ seed: 3, script, toolCallParser: "qwen3_coder" });
    const model = await loadModel(QWEN3_CODER);
    const response = await post(sim, "/v1/chat/completions", { model: "m", messages: [user], tools, return_token_ids: true });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as any;
    const message = answer.choices[0].message;
    const sample = sim.samples.at(-1) as SimSample;
    // The XML format, no think block (the model does not think, whatever the script says).
    expect(sample.text).toBe("I'll write it.\n\n<tool_call>\n<function=write>\n<parameter=path>\nnotes.md\n</parameter>\n<parameter=content>\nline 1\n  indented\n\n</parameter>\n</function>\n</tool_call><|im_end|>");
    expect(message.reasoning ?? null).toBeNull();
    expect(message.content).toBe("I'll write it.");
    expect(message.tool_calls.map((c: any) => [c.function.name, JSON.parse(c.function.arguments)])).toEqual([["write", { path: "notes.md", content: "line 1\n  indented\n" }]]);
    expect(answer.choices[0].finish_reason).toBe("tool_calls");
    // The prompt is Qwen3-Coder's: tools as XML.
    expect(answer.prompt_token_ids).toEqual(model.renderChatIds({ messages: [user], tools }));
    expect(model.renderChat({ messages: [user], tools })).toContain("<tools>\n<function>\n<name>read</name>\n<description>Read a file</description>");
    // The template renders the parsed answer back to exactly the sampled tokens.
    const prompt = model.renderChat({ messages: [user], tools });
    const turn = { role: "assistant", content: message.content, tool_calls: message.tool_calls };
    const whole = model.renderChat({ messages: [user, turn], tools, add_generation_prompt: false });
    expect(whole).toBe(`${prompt}${sample.text}\n`);
    expect(model.tokenizer.encode(whole)).toEqual([...answer.prompt_token_ids, ...sample.token_ids, ...model.tokenizer.encode("\n")]);
  });

  test("a non-string argument is written with Python's str(), typed back by the tool's schema; streamed deltas add up to the calls", async () => {
    const sim = createPolicySimulator({ seed: 3, script, toolCallParser: "qwen3_coder" });
    const first = (await (await post(sim, "/v1/chat/completions", { messages: [user], tools })).json()) as any;
    const call = first.choices[0].message.tool_calls[0];
    const messages = [user, { role: "assistant", content: first.choices[0].message.content, tool_calls: [call] }, { role: "tool", tool_call_id: call.id, content: "ok" }];
    const stream = await (await post(sim, "/v1/chat/completions", { messages, tools, stream: true })).text();
    expect(sim.samples.at(-1)!.text).toBe("<tool_call>\n<function=bash>\n<parameter=command>\nwc -l notes.md\n</parameter>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call><|im_end|>");
    const deltas = stream
      .split("\n")
      .filter((l) => l.startsWith("data: {"))
      .map((l) => JSON.parse(l.slice(6)).choices[0]?.delta ?? {});
    const args = deltas.flatMap((d) => d.tool_calls ?? []).map((t: any) => t.function?.arguments ?? "").join("");
    expect(deltas.flatMap((d) => d.tool_calls ?? []).find((t: any) => t.function?.name)?.function.name).toBe("bash");
    expect(JSON.parse(args)).toEqual({ command: "wc -l notes.md", timeout: 5 });
    expect(deltas.some((d) => d.reasoning || d.reasoning_content)).toBe(false);
  });

  test("/v1/completions and SGLang's /generate read the XML tools of a rendered Qwen3-Coder prompt and continue it in XML", async () => {
    const model = await loadModel(QWEN3_CODER);
    const promptIds = model.renderChatIds({ messages: [user], tools });
    const vllm = createPolicySimulator({ seed: 3, script, toolCallParser: "qwen3_coder" });
    const completion = (await (await post(vllm, "/v1/completions", { prompt: promptIds, max_tokens: 200 })).json()) as any;
    expect(completion.choices[0].text).toStartWith("I'll write it.\n\n<tool_call>\n<function=write>\n<parameter=path>\nnotes.md\n</parameter>");
    const sglang = createPolicySimulator({ seed: 3, script, toolCallParser: "qwen3_coder", engine: "sglang" });
    const generated = (await (await post(sglang, "/generate", { input_ids: promptIds, sampling_params: { max_new_tokens: 200 } })).json()) as any;
    expect(generated.text).toBe(completion.choices[0].text);
    // The tools as read back from the XML: names, descriptions, types, required.
    expect(xmlTools(model.renderChat({ messages: [user], tools }))).toEqual([
      { type: "function", function: { name: "read", description: "Read a file", parameters: { type: "object", properties: { path: { type: "string", description: "The path" } }, required: ["path"] } } },
      { type: "function", function: { name: "write", description: "Write a file", parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] } } },
      { type: "function", function: { name: "bash", description: "Run a command", parameters: { type: "object", properties: { command: { type: "string" }, timeout: { type: "integer" } }, required: ["command"] } } },
    ]);
    // A prompt without tools has none, and a Qwen3-Coder prompt never opens a think block.
    expect(chatPrompt(model.renderChat({ messages: [user] }), { toolFormat: "qwen3_coder", thinks: false })).toEqual({ turns: [user as any], tools: [], thinking: false });
  });

  test("the hermes default is unchanged; a parser the simulator cannot play is refused, by option and by flag", async () => {
    expect(modelText({ content: "", toolCalls: [{ name: "bash", arguments: '{"command":"ls"}' }] }, true)).toBe('<think>\n\n</think>\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>');
    expect(modelText({ content: "x", toolCalls: [{ name: "f", arguments: '{"a":[1,{"b":null}],"c":true,"d":null,"e":1.0,"f":"s"}' }] }, false, "qwen3_coder")).toBe(
      'x\n\n<tool_call>\n<function=f>\n<parameter=a>\n[1, {"b": null}]\n</parameter>\n<parameter=c>\nTrue\n</parameter>\n<parameter=d>\nNone\n</parameter>\n<parameter=e>\n1.0\n</parameter>\n<parameter=f>\ns\n</parameter>\n</function>\n</tool_call>',
    );
    expect(() => createPolicySimulator({ seed: 1, toolCallParser: "pythonic" as never })).toThrow(/toolCallParser must be one of hermes, qwen3_coder, got "pythonic"/);
    await expect(policySimCommand(["--tool-call-parser", "pythonic"])).rejects.toThrow(/--tool-call-parser must be one of hermes, qwen3_coder/);
  });
});
