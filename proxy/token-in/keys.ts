/**
 * What token-in mode compares, message by message (docs/token-in.md): a key per message of the
 * conversation the chat template sees (after vLLM's preprocessing: content parts joined, argument
 * strings parsed), holding what a harness may not change without rewriting the history the
 * policy saw, and leaving out what it may:
 *
 * - kept: the role, the content text, each tool call's name and arguments (as values);
 * - left out: tool-call ids and `tool_call_id` (Qwen3's template never writes them; OpenClaw
 *   renames them), reasoning (a harness may drop or keep it: the chain's tokens hold what was
 *   sampled), whitespace around an assistant's text (harnesses trim it; hermes streams the
 *   newlines before a call as content), the spelling of arguments (key order, spacing: a
 *   harness re-serializes them).
 *
 * One more echo is accepted for an answer with reasoning: the reasoning sent back as the turn's
 * text, before its content (pi over Anthropic Messages turns a thinking block without a
 * signature into a text block). The chain's tokens hold the reasoning where it was sampled, so
 * the policy's view is unchanged; that key compares the text with all whitespace left out.
 *
 * Keys are hashes (64-bit wyhash of the canonical text) so a chain holds 8 bytes of text per message.
 */
import { pyDumps, pyStrip, tryPyLoads, type PreparedChat, type PyDict, type PyValue } from "../../model/index.ts";
import type { ChainAnswer } from "../state/chains.ts";

/** A value with dict keys sorted, as canonical text (arguments compared as values, not spelling). */
function canonical(value: PyValue): string {
  const sort = (v: PyValue): PyValue => {
    if (v instanceof Map) return new Map([...v.keys()].sort().map((k) => [k, sort(v.get(k)!)]));
    if (Array.isArray(v)) return v.map(sort);
    return v;
  };
  return pyDumps(sort(value));
}

const hash = (text: string) => Bun.hash(text).toString(36);

/** A tool call's name and arguments (a dict, as vLLM's preprocessing leaves them). */
function callText(call: PyValue): string {
  const fn = call instanceof Map ? call.get("function") : undefined;
  const f = fn instanceof Map ? fn : call instanceof Map ? call : new Map();
  const name = f.get("name");
  const args = f.get("arguments");
  return `${typeof name === "string" ? name : ""}\u0000${canonical(args instanceof Map ? args : new Map())}`;
}

/** The key of an assistant turn: its text (trimmed) and its calls. */
export function assistantKey(content: string, calls: readonly string[]): string {
  return hash(`assistant\u0001${pyStrip(content)}\u0001${calls.join("\u0002")}`);
}

/**
 * The key of one message of a prepared conversation.
 *
 * @example
 * messageKey(prepared.conversation[0]) === messageKey(samePreparedAgain.conversation[0]) // true
 */
export function messageKey(message: PyDict): string {
  // A message preprocessed before is the same dict again (model/preprocess.ts's cache).
  let key = messageKeys.get(message);
  if (key === undefined) messageKeys.set(message, (key = messageKeyOf(message)));
  return key;
}

const messageKeys = new WeakMap<PyDict, string>();

function messageKeyOf(message: PyDict): string {
  const role = String(message.get("role"));
  const content = message.get("content");
  const text = textOf(content) ?? canonical(content as PyValue);
  if (role === "assistant") {
    const calls = message.get("tool_calls");
    return assistantKey(text, Array.isArray(calls) ? calls.map(callText) : []);
  }
  return hash(`${role}\u0001${text}`);
}

/**
 * A message's content as text: a string, nothing, or the parts of a template that takes them
 * ("openai" content format) when they are all text (joined, as the template writes them);
 * undefined for parts with images (compared whole).
 */
function textOf(content: PyValue | undefined): string | undefined {
  if (typeof content === "string") return content;
  if (content == null) return "";
  if (!Array.isArray(content) || !content.every((p) => p instanceof Map && p.get("type") === "text")) return undefined;
  return content.map((p) => String((p as Map<string, PyValue>).get("text") ?? "")).join("");
}

/**
 * The key of the answer the harness was sent: an assistant turn with this text and these calls
 * (argument strings read as vLLM reads them: anything that is not a JSON object is `{}`).
 *
 * @example
 * answerKey({ content: "\n\n", toolCalls: [{ name: "ls", arguments: '{"path": "."}' }] }) === messageKey(echoOfIt) // true
 */
export function answerKey(answer: { content: string | null; toolCalls: readonly { name: string; arguments: string }[] }): string {
  return assistantKey(answer.content ?? "", answerCallTexts(answer.toolCalls));
}

/** The sent calls as `callText` writes an echoed one. */
function answerCallTexts(toolCalls: readonly { name: string; arguments: string }[]): string[] {
  return toolCalls.map((c) => {
    const args = tryPyLoads(c.arguments);
    return `${c.name}\u0000${canonical(args instanceof Map ? args : new Map())}`;
  });
}

/** Text with every whitespace character left out (how the reasoning-as-text echo is compared). */
const squash = (text: string) => text.replace(/\s+/gu, "");

/**
 * The key of an answer with reasoning as a harness may echo it with the reasoning as text (its
 * reasoning, then its content, whitespace left out), or undefined when it has no reasoning.
 *
 * @example
 * reasoningAsTextKey({ content: "Done.", reasoning: "Think.", toolCalls: [] }) === runKey([echo], { squashed: true }) // echo: { role: "assistant", content: "Think.\n\nDone." }
 */
export function reasoningAsTextKey(answer: SentAnswerLike): string | undefined {
  if (!hasReasoning(answer)) return undefined;
  return assistantKey(squash(answer.reasoning + (answer.content ?? "")), answerCallTexts(answer.toolCalls));
}

type SentAnswerLike = { content: string | null; reasoning: string | null; toolCalls: readonly { name: string; arguments: string }[] };

const hasReasoning = (answer: SentAnswerLike): answer is SentAnswerLike & { reasoning: string } => !!answer.reasoning && answer.reasoning.trim() !== "";

/**
 * A chain's answer's key (`answerKey`), made the first time the next call compares its echo
 * with it and kept: made then rather than when the answer is recorded, it runs beside the
 * echo's own key (the same parser and writer, still in the processor's caches).
 *
 * @example
 * sentAnswerKey(chain.answer) === answerKey(sent) // true
 */
export function sentAnswerKey(answer: ChainAnswer): string {
  if (answer.key === undefined) {
    answer.key = answerKey(answer.sent!);
    if (answer.reasoningAsText !== undefined) answer.sent = undefined;
  }
  return answer.key;
}

/**
 * Whether the echo `messages` is the chain's answer with its reasoning sent back as text
 * (`reasoningAsTextKey`, made the first time it is asked and kept).
 */
export function echoedReasoningAsText(answer: ChainAnswer, messages: readonly PyDict[]): boolean {
  if (answer.reasoningAsText === undefined) {
    answer.reasoningAsText = reasoningAsTextKey(answer.sent!) ?? null;
    if (answer.key !== undefined) answer.sent = undefined;
  }
  return answer.reasoningAsText !== null && runKey(messages, { squashed: true }) === answer.reasoningAsText;
}

/**
 * A chain's answer (`ChainAnswer`) for one the harness was sent: kept as sent, its keys made
 * when they are compared, when its text is short (up to `KEPT_ANSWER_CHARS`); else its keys
 * now, so a chain does not hold a long reasoning's text.
 *
 * @example
 * chainAnswer({ content: "Done.", reasoning: null, toolCalls: [] }) // { sent: {…}, reasoningAsText: null }
 */
export function chainAnswer(sent: SentAnswerLike): ChainAnswer {
  const reasoningAsText = hasReasoning(sent) ? undefined : null;
  let chars = (sent.content?.length ?? 0) + (sent.reasoning?.length ?? 0);
  for (const call of sent.toolCalls) chars += call.name.length + call.arguments.length;
  if (chars <= KEPT_ANSWER_CHARS) return { sent: { content: sent.content, reasoning: sent.reasoning, toolCalls: sent.toolCalls }, ...(reasoningAsText === null ? { reasoningAsText } : {}) };
  return { key: answerKey(sent), reasoningAsText: reasoningAsTextKey(sent) ?? null };
}

/** The longest answer (its characters) a chain keeps as sent: 8 KiB of UTF-16 at most per chain, against the ~80 KB of a 20k-token chain's ids. */
export const KEPT_ANSWER_CHARS = 4096;

/**
 * The key of an assistant turn that spans several consecutive assistant messages of the
 * conversation (a harness that splits one answer): their text joined, their calls in order.
 */
export function runKey(messages: readonly PyDict[], o: { squashed?: boolean } = {}): string {
  let text = "";
  const calls: string[] = [];
  for (const m of messages) {
    const content = m.get("content");
    text += textOf(content) ?? "";
    const c = m.get("tool_calls");
    if (Array.isArray(c)) for (const call of c) calls.push(callText(call));
  }
  return assistantKey(o.squashed ? squash(text) : text, calls);
}

/**
 * `runKey` of `conversation[from..end)`, where `keys` are the conversation's message keys: an
 * echo of one message whose content is text has the key its message already has (`messageKey`
 * writes an assistant message as `runKey` does), so its calls are not written again.
 *
 * @example
 * echoKey(conversation, keys, 3, 4) === runKey(conversation.slice(3, 4)) // true
 */
export function echoKey(conversation: readonly PyDict[], keys: readonly string[], from: number, end: number): string {
  if (end === from + 1 && textOf(conversation[from]!.get("content")) !== undefined) return keys[from]!;
  return runKey(conversation.slice(from, end));
}

/**
 * The key of what renders the conversation around its messages: the tools and every template
 * variable (enable_thinking, documents, …) except add_generation_prompt.
 *
 * @example
 * settingsKey(model.prepare({ messages, tools })) !== settingsKey(model.prepare({ messages, tools: otherTools })) // true
 */
export function settingsKey(prepared: PreparedChat): string {
  const vars = [...prepared.variables].filter(([k]) => k !== "add_generation_prompt").sort(([a], [b]) => (a < b ? -1 : 1));
  // Tools are compared in their order: the system block lists them in it.
  const key = () => hash(vars.map(([k, v]) => `${k}=${k === "tools" ? toolsText(v) : canonical(v)}`).join("\u0001"));
  // A tool list preprocessed before is the same array again: it keeps its last key, with the
  // other variables' text it was made with (a rollout's calls send the same).
  const tools = prepared.variables.get("tools");
  if (!Array.isArray(tools)) return key();
  const others = vars.flatMap(([k, v]) => (k === "tools" ? [] : [`${k}=${canonical(v)}`])).join("\u0001");
  const last = settingsKeys.get(tools);
  if (last !== undefined && last.others === others) return last.key;
  const made = key();
  settingsKeys.set(tools, { others, key: made });
  return made;
}

const settingsKeys = new WeakMap<readonly PyValue[], { others: string; key: string }>();

/** The tools as text; a tool list preprocessed before is the same array again (model/preprocess.ts's cache). */
function toolsText(tools: PyValue): string {
  if (!Array.isArray(tools)) return pyDumps(tools);
  let text = toolsTexts.get(tools);
  if (text === undefined) toolsTexts.set(tools, (text = pyDumps(tools)));
  return text;
}

const toolsTexts = new WeakMap<readonly PyValue[], string>();
