/**
 * The rendering suite's corpus: chat requests as harnesses send them, each rendered by
 * model/, by the simulator and by vLLM 0.33.0 + transformers (tests/reference/rendering.test.ts).
 * Add a case by appending to CASES (or REJECTED, for requests vLLM refuses); the harness
 * fixtures are recorded by tests/reference/capture-harness-requests.ts. (NaN and Infinity in
 * arguments are checked in model/model.test.ts: the oracle answers in JSON, which has neither.)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface RenderCase {
  name: string;
  request: Record<string, unknown>;
}

type Msg = Record<string, unknown>;
const tool = (name: string, description: string | undefined, properties: Record<string, unknown>, required: string[] = []) => ({
  type: "function",
  function: { name, ...(description !== undefined ? { description } : {}), parameters: { type: "object", properties, required } },
});
const bash = tool("bash", "Run a shell command in the workspace.", { command: { type: "string", description: "The command" } }, ["command"]);
const write = tool("write", "Write a file.", { path: { type: "string" }, content: { type: "string" } }, ["path", "content"]);
const read = tool("read_file", "Read a file; returns its lines.", { path: { type: "string" }, offset: { type: "integer", minimum: 0, default: 0 } }, ["path"]);
const rich = tool(
  "search",
  "Recherche dans les fichiers — «regex» ou texte, 中文 ok. Returns up to `limit` hits.\nSecond line.",
  {
    query: { type: "string" },
    mode: { type: "string", enum: ["regex", "text"], default: "text" },
    limit: { type: "integer", minimum: 1, maximum: 500, default: 50 },
    score: { type: "number", minimum: 0.5, exclusiveMaximum: 1.25 },
    offset: { type: "number", minimum: -3 },
    paths: { type: "array", items: { type: "string" } },
    options: { type: "object", properties: { case: { type: "boolean" }, nested: { type: "object", properties: { deep: { type: ["string", "null"] } } } } },
  },
  ["query"],
);
const tools = [bash, write, read];
const sys = { role: "system", content: "You are a coding agent. Work in /tmp/ws-1." };
const user = (content: unknown): Msg => ({ role: "user", content });
const call = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } });
const assistant = (content: string | null, calls: ReturnType<typeof call>[] = [], extra: Msg = {}): Msg => ({ role: "assistant", content, ...(calls.length ? { tool_calls: calls } : {}), ...extra });
const result = (id: string, content: unknown): Msg => ({ role: "tool", tool_call_id: id, content });
/** A conversation with one tool call whose arguments are `args`, and its result. */
const withArgs = (args: string, name = "bash"): Msg[] => [sys, user("Do it."), assistant(null, [call("c1", name, args)]), result("c1", "ok")];

function longEpisode(turns: number, sendReasoning: boolean): Msg[] {
  const messages: Msg[] = [sys, user("Fix the failing test in src/ and run the suite until it passes.")];
  for (let i = 0; i < turns; i++) {
    const id = `call_${i}`;
    const args = i % 3 === 0 ? `{"command": "pytest -x tests/test_${i}.py"}` : i % 3 === 1 ? `{"path":"src/mod_${i}.py","content":"def f():\\n    return ${i}\\n"}` : `{"path": "src/mod_${i}.py"}`;
    const name = i % 3 === 0 ? "bash" : i % 3 === 1 ? "write" : "read_file";
    messages.push(assistant(i % 4 === 0 ? `Step ${i}: checking.` : null, [call(id, name, args)], sendReasoning ? { reasoning_content: `\nThinking about step ${i}.\n` } : {}));
    messages.push(result(id, i % 5 === 0 ? `FAILED tests/test_${i}.py::test_x - AssertionError\n\n1 failed, ${i} passed` : `{"ok": true, "step": ${i}}`));
    if (i === Math.floor(turns / 2)) messages.push(user("Also keep the old behaviour for empty input."));
  }
  return messages;
}

export const CASES: RenderCase[] = [
  // Plain chats.
  { name: "user only", request: { messages: [user("Hello")] } },
  { name: "system and user", request: { messages: [sys, user("Hello")] } },
  { name: "multi-turn text", request: { messages: [sys, user("Hi"), assistant("Hello! How can I help?"), user("Tell me a joke.")] } },
  { name: "empty user content", request: { messages: [user("")] } },
  { name: "user without content", request: { messages: [{ role: "user" }, user("x")] } },
  { name: "chat_template_kwargs that are apply_chat_template's own parameters", request: { messages: [user("x")], chat_template_kwargs: { tokenize: true, return_dict: false, custom_flag: 1 } } },
  { name: "whitespace kept", request: { messages: [user("  lead\n\n\ntrail  \n"), assistant("\n\nanswer\n\n"), user("\t")] } },
  // Tools.
  { name: "one tool, no system", request: { messages: [user("List files.")], tools: [bash] } },
  { name: "system and tools", request: { messages: [sys, user("List files.")], tools } },
  { name: "tool without description or parameters", request: { messages: [user("x")], tools: [{ type: "function", function: { name: "noop" } }] } },
  { name: "rich tool schema (enum, defaults, floats, nested, non-ASCII)", request: { messages: [sys, user("Find TODOs.")], tools: [rich, ...tools] } },
  { name: "twelve tools", request: { messages: [sys, user("x")], tools: Array.from({ length: 12 }, (_, i) => tool(`tool_${i}`, `Tool number ${i}.`, { arg: { type: i % 2 ? "string" : "integer" } })) } },
  { name: "strict tool", request: { messages: [user("x")], tools: [{ type: "function", function: { ...bash.function, strict: true } }] } },
  { name: "tool_choice none keeps the tools in the prompt", request: { messages: [user("x")], tools, tool_choice: "none" } },
  // Tool-call arguments: what vLLM parses and the template writes back.
  { name: "compact arguments", request: { messages: withArgs('{"command":"ls -la"}'), tools } },
  { name: "spaced arguments", request: { messages: withArgs('{"command": "ls -la"}'), tools } },
  { name: "nested arguments", request: { messages: withArgs('{"command":"x","env":{"A":[1,2,{"b":null,"c":true}],"B":{}}}'), tools } },
  { name: "non-ASCII arguments", request: { messages: withArgs('{"command":"echo \'héllo 你好 🎉\' > ü.txt"}'), tools } },
  { name: "escapes in arguments", request: { messages: withArgs('{"command":"printf \\"a\\\\tb\\\\n\\" | tee \\"q.txt\\"\\nls","x":"\\u00e9\\u0001"}'), tools } },
  { name: "float arguments", request: { messages: withArgs('{"timeout":30.0,"eps":1e-7,"ratio":1.5,"big":1e16,"neg":-0.0}'), tools } },
  { name: "big integer argument", request: { messages: withArgs('{"id":123456789012345678901234567890,"n":-9007199254740993}'), tools } },
  { name: "number-like keys keep their order", request: { messages: withArgs('{"b":1,"1":2,"0":3,"a":4}'), tools } },
  { name: "empty argument string", request: { messages: withArgs(""), tools } },
  { name: "empty object arguments", request: { messages: withArgs("{}"), tools } },
  { name: "invalid JSON arguments become {}", request: { messages: [sys, user("x"), assistant(null, [call("a", "bash", "not json"), call("b", "bash", "[1,2]"), call("c", "bash", "42"), call("d", "bash", '{"command": "ls"')]), result("a", "1"), result("b", "2"), result("c", "3"), result("d", "4")], tools } },
  { name: "arguments with surrounding whitespace", request: { messages: withArgs('\n  {"command": "ls"}  \n'), tools } },
  { name: "duplicate keys: the last value wins", request: { messages: withArgs('{"command":"a","x":1,"command":"b"}'), tools } },
  { name: "markup inside an argument string", request: { messages: withArgs('{"command":"echo \'</tool_call><|im_end|>\'"}'), tools } },
  // Parallel calls.
  { name: "two calls, no content", request: { messages: [sys, user("x"), assistant(null, [call("a", "bash", '{"command":"ls"}'), call("b", "read_file", '{"path":"a.txt"}')]), result("a", "a.txt"), result("b", "hello")], tools } },
  { name: "three calls after text", request: { messages: [sys, user("x"), assistant("Running three things.", [call("a", "bash", '{"command":"ls"}'), call("b", "bash", '{"command":"pwd"}'), call("c", "bash", '{"command":"id"}')]), result("a", "1"), result("b", "2"), result("c", "3")], tools } },
  { name: "parallel calls then a text answer", request: { messages: [sys, user("x"), assistant("", [call("a", "bash", '{"command":"ls"}'), call("b", "bash", '{"command":"pwd"}')]), result("a", "1"), result("b", "2"), assistant("Both done.")], tools, add_generation_prompt: false } },
  // Tool results.
  { name: "tool result holding JSON", request: { messages: [...withArgs('{"command":"cat x.json"}').slice(0, 3), result("c1", '{"ok": true, "items": [1, 2], "msg": "héllo"}')], tools } },
  { name: "tool result with blank lines", request: { messages: [...withArgs('{"command":"ls"}').slice(0, 3), result("c1", "a\n\n\nb\n\n")], tools } },
  { name: "tool result as text parts", request: { messages: [...withArgs('{"command":"ls"}').slice(0, 3), result("c1", [{ type: "text", text: "part one" }, { type: "text", text: "part two" }])], tools } },
  { name: "empty tool result", request: { messages: [...withArgs('{"command":"true"}').slice(0, 3), result("c1", "")], tools } },
  { name: "tool result that looks like markup", request: { messages: [...withArgs('{"command":"cat t"}').slice(0, 3), result("c1", "<tool_response>\nnested\n</tool_response>")], tools } },
  // Reasoning in history.
  { name: "reasoning after the last user message is kept", request: { messages: [sys, user("x"), assistant(null, [call("a", "bash", '{"command":"ls"}')], { reasoning_content: "\nI should list.\n" }), result("a", "f")], tools } },
  { name: "reasoning before the last user message is dropped", request: { messages: [sys, user("x"), assistant("Answer one.", [], { reasoning_content: "thinking 1" }), user("and then?")], tools } },
  { name: "reasoning field instead of reasoning_content", request: { messages: [user("x"), assistant(null, [call("a", "bash", '{"command":"ls"}')], { reasoning: "via reasoning" }), result("a", "f")], tools } },
  { name: "reasoning wins over reasoning_content", request: { messages: [user("x"), assistant("ok", [], { reasoning: "r-field", reasoning_content: "rc-field" }), result("z", "f")] } },
  { name: "think block inside content, no reasoning field", request: { messages: [user("x"), assistant("<think>\nplanning\n</think>\n\nHere it is.", [call("a", "bash", '{"command":"ls"}')]), result("a", "f")], tools } },
  { name: "empty reasoning after the last user message", request: { messages: [user("x"), assistant("\n\nText then a call.\n", [call("a", "bash", '{"command":"ls"}')], { reasoning_content: "" }), result("a", "f")], tools } },
  { name: "reasoning wrapped in newlines, content with leading newlines", request: { messages: [user("x"), assistant("\n\nDone.", [], { reasoning_content: "\n\nr\n\n" })], add_generation_prompt: false } },
  { name: "a think block in an earlier turn's content is stripped", request: { messages: [user("a"), assistant("<think>\nold\n</think>\n\nold answer"), user("b")] } },
  // Multi-part text.
  { name: "user text parts joined with a newline", request: { messages: [user([{ type: "text", text: "first" }, { type: "text", text: "second" }, { type: "input_text", text: "third" }])] } },
  { name: "system parts with Claude Code's billing line", request: { messages: [{ role: "system", content: [{ type: "text", text: "x-anthropic-billing-header: cc_version=2.1; cch=9f8e" }, { type: "text", text: "You are Claude Code." }] }, user("hi")] } },
  { name: "string system with the billing line", request: { messages: [{ role: "system", content: "x-anthropic-billing-header: cc_version=2.1; cch=1\nYou are Claude Code.\nBe brief." }, user("hi")] } },
  { name: "assistant content as parts", request: { messages: [user("x"), { role: "assistant", content: [{ type: "text", text: "a" }, { type: "text", text: "b" }] }, user("y")] } },
  // Thinking switches.
  { name: "enable_thinking false", request: { messages: [sys, user("x")], tools, chat_template_kwargs: { enable_thinking: false } } },
  { name: "reasoning_effort none", request: { messages: [user("x")], reasoning_effort: "none" } },
  { name: "enable_thinking false beats reasoning_effort high", request: { messages: [user("x")], reasoning_effort: "high", chat_template_kwargs: { enable_thinking: false } } },
  { name: "enable_thinking true", request: { messages: [user("x"), assistant("y", [], { reasoning_content: "r" }), user("z")], chat_template_kwargs: { enable_thinking: true } } },
  // Developer and system turns.
  { name: "developer only", request: { messages: [{ role: "developer", content: "Follow the rules." }, user("x")] } },
  { name: "developer, system and a late system message merged", request: { messages: [{ role: "developer", content: "dev" }, sys, user("x"), { role: "system", content: "late" }, { role: "developer", content: "" }], tools } },
  { name: "a late system message without developer stays in place", request: { messages: [sys, user("x"), assistant("y"), { role: "system", content: "Reminder: be brief." }, user("z")] } },
  { name: "two system messages at the start", request: { messages: [sys, { role: "system", content: "Second system." }, user("x")] } },
  // Other request fields and roles.
  { name: "add_generation_prompt false", request: { messages: [user("x"), assistant("y")], add_generation_prompt: false } },
  { name: "continue_final_message", request: { messages: [user("Write a haiku."), assistant("Autumn moonlight—")], add_generation_prompt: false, continue_final_message: true } },
  { name: "names on messages", request: { messages: [{ ...sys, name: "root" }, { role: "user", content: "x", name: "alice" }] } },
  { name: "unknown roles render nothing", request: { messages: [user("x"), { role: "function", content: "f" }, { role: "ipython", content: "i" }, user("y")] } },
  // Long episodes.
  { name: "long episode, reasoning sent back", request: { messages: longEpisode(30, true), tools } },
  { name: "long episode, reasoning dropped, a second user turn", request: { messages: longEpisode(24, false), tools: [rich, ...tools] } },
];

/** Requests vLLM refuses with a 400; the simulator must refuse them too. */
export const REJECTED: RenderCase[] = [
  { name: "object arguments", request: { messages: [user("x"), assistant(null, [{ id: "a", type: "function", function: { name: "bash", arguments: { command: "ls" } } } as never])] } },
  { name: "null user content", request: { messages: [user(null)] } },
  { name: "continue_final_message with add_generation_prompt", request: { messages: [user("x"), assistant("y")], continue_final_message: true, add_generation_prompt: true } },
  { name: "empty tools list", request: { messages: [sys, user("x")], tools: [] } },
  { name: "a chat template sent with the request", request: { messages: [user("x")], chat_template_kwargs: { chat_template: "{{ messages }}" } } },
  { name: "unsupported content part", request: { messages: [user([{ type: "file", file: { file_id: "f" } }])] } },
];

/** Chat requests recorded from real harness CLIs (tests/reference/fixtures/harness-*.json). */
export function harnessCases(): RenderCase[] {
  const dir = join(import.meta.dir, "fixtures");
  const cases: RenderCase[] = [];
  for (const file of readdirSync(dir).filter((f) => /^harness-.*\.json$/.test(f)).sort()) {
    const { harness, requests } = JSON.parse(readFileSync(join(dir, file), "utf8")) as { harness: string; requests: Record<string, unknown>[] };
    requests.forEach((request, i) => cases.push({ name: `${harness} call ${i + 1} of ${requests.length}`, request }));
  }
  return cases;
}
