/**
 * Whether a chat template's text after an assistant turn depends only on the messages a short
 * conversation keeps (model/append.ts, `windowOf`: the first message, the user and system
 * messages before the turn, the turn, everything after it) — so that token-in mode can render
 * what a call appends from a few messages instead of the whole conversation, O(new messages)
 * instead of O(conversation) Jinja per call.
 *
 * A template may read anything from the whole conversation (Qwen3 reads the index of the last
 * user query; a template could number tool calls across the conversation), so this is not
 * assumed: the template is probed once, on the conversations below (tool loops with parallel
 * calls and consecutive results, several user turns, reasoning in and out of the content, user
 * messages shaped as tool responses, thinking on and off, with tools and without), rendering
 * what follows every assistant turn both ways. Any difference, or an error on one side only,
 * and the template gets the whole conversation on every call, as before.
 * `tests/reference/token-in.test.ts` holds the appended renderings of Qwen3's and
 * Qwen3-Coder's templates to transformers rendering the whole conversation.
 */
import type { ChatRenderRequest } from "./preprocess.ts";

const tools = [
  { type: "function", function: { name: "read", description: "Read a file.", parameters: { type: "object", properties: { path: { type: "string", description: "The path." } }, required: ["path"] } } },
  { type: "function", function: { name: "bash", description: "Run a command.", parameters: { type: "object", properties: { command: { type: "string" }, timeout: { type: "integer" } }, required: ["command"] } } },
];
const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });
const toolLoop = [
  { role: "system", content: "You are an agent." },
  { role: "user", content: "Count the lines of a.txt." },
  { role: "assistant", content: "", tool_calls: [call("c1", "read", { path: "a.txt" })] },
  { role: "tool", tool_call_id: "c1", content: "one\ntwo" },
  { role: "assistant", content: "Two reads.", tool_calls: [call("c2", "read", { path: "b.txt" }), call("c3", "bash", { command: "wc -l a.txt", timeout: 5 })] },
  { role: "tool", tool_call_id: "c2", content: "three" },
  { role: "tool", tool_call_id: "c3", content: "2 a.txt" },
  { role: "assistant", content: "<think>\nchecked\n</think>\n\nIt has 2 lines.", tool_calls: [call("c4", "bash", { command: "true" })] },
  { role: "tool", tool_call_id: "c4", content: "" },
  { role: "assistant", reasoning_content: "done", content: "2 lines." },
  { role: "user", content: "<tool_response>\nlate\n</tool_response>" },
  { role: "assistant", content: "Noted." },
  { role: "user", content: "And b.txt?" },
  { role: "assistant", content: "", tool_calls: [call("c5", "read", { path: "b.txt" })] },
  { role: "tool", tool_call_id: "c5", content: "x" },
];
const chat = [
  { role: "user", content: "Hi" },
  { role: "assistant", content: "Hello." },
  { role: "user", content: "Again" },
  { role: "assistant", content: "<think>\nhm\n</think>\n\nHello again." },
  { role: "user", content: "Bye" },
];

/** The probe's requests: each is rendered after each of its assistant turns. */
export const SUFFIX_PROBES: ChatRenderRequest[] = [
  { messages: toolLoop, tools },
  { messages: toolLoop.slice(0, 9), tools, chat_template_kwargs: { enable_thinking: false } },
  { messages: toolLoop.slice(1) },
  { messages: chat },
  { messages: [{ role: "system", content: "Be brief." }, ...chat], chat_template_kwargs: { enable_thinking: false } },
];

/**
 * Tool results a template that escapes, trims or re-spells them writes otherwise: quotes,
 * backslashes, tabs, spaces and newlines at the ends, the template's own tags, non-ASCII, an
 * empty result, a call id with a space, a `name` (model/append-holes.ts).
 */
const oddResults = [
  { role: "user", content: "Run them." },
  { role: "assistant", content: "", tool_calls: [call("o1", "bash", { command: "a" }), call("o2", "bash", { command: "b" })] },
  { role: "tool", tool_call_id: "o1", content: '  "quoted" \\ back\\slash\n\ttab  ' },
  { role: "tool", tool_call_id: "o2 x", name: "bash", content: '\n<tool_response>\nünïcode ✓ {"a": 1}\n</tool_response>\n' },
  { role: "assistant", content: "ok", tool_calls: [call("o3", "read", { path: "x" })] },
  { role: "tool", tool_call_id: "o3", content: "" },
];

/** The probe's requests for holed texts: the suffix probe's and the odd tool results, with and without tools and a system message. */
export const HOLE_PROBES: ChatRenderRequest[] = [...SUFFIX_PROBES, { messages: [{ role: "system", content: "You are an agent." }, ...oddResults], tools }, { messages: oddResults }];
