/**
 * What auxiliary-call recognition needs of a recorded request, whatever its protocol: the system
 * text, the conversation as comparable turns, the last message when the user sent it, and how
 * many tools were offered.
 */
import { Protocol, type ModelCall } from "../schemas/index.ts";
import { requestMessagesOfBody } from "./messages.ts";

export type RequestView = {
  /** System text: system / developer messages, Anthropic `system` blocks, Responses `instructions`. */
  system: string;
  /**
   * The conversation after the system text, one hash per message of its role, text and the names
   * of the tools it called. Ids and argument spelling are left out: harnesses rename ids and
   * re-serialize arguments, and neither makes a turn a different turn.
   */
  turns: (number | bigint)[];
  /** The text of the request's last message when it is a user message, else "". */
  lastUser: string;
  /** Tools offered (0 when none). */
  tools: number;
};

const decoder = new TextDecoder();

/**
 * The view of a call's request (`bytes`: its body, `requestBodyOf(call, content)`), or undefined
 * when it has none: a Completions prompt (plain text, no roles or tools) or a body that is not a
 * JSON object.
 *
 * @example
 * requestView(call, requestBodyOf(call, collected.content))?.tools; // 4
 */
export function requestView(call: ModelCall, bytes: Uint8Array): RequestView | undefined {
  return requestViewOfBody(call, () => JSON.parse(decoder.decode(bytes)));
}

/**
 * The view of a call's request from its parsed body (`body()`: parsed only for protocols with
 * messages; a body that throws or is not a JSON object has no view).
 *
 * @example
 * requestViewOfBody(call, () => bodies.json(call))?.system; // "You are a helpful assistant"
 */
export function requestViewOfBody(call: ModelCall, body: () => any): RequestView | undefined {
  if (call.protocol === Protocol.COMPLETIONS) return undefined;
  let json: any;
  try {
    json = body();
  } catch {
    return undefined;
  }
  if (!json || typeof json !== "object" || Array.isArray(json)) return undefined;
  const messages = requestMessagesOfBody(call.protocol, json);
  if (!messages) return undefined;
  const system: string[] = [];
  const turns: (number | bigint)[] = [];
  for (const m of messages) {
    if (m.role === "system" || m.role === "developer") system.push(m.content);
    else turns.push(Bun.hash(`${m.role}\u0000${m.content}\u0000${(m.tool_calls ?? []).map((t) => t.function.name).join(",")}`));
  }
  const last = messages.at(-1);
  return {
    system: system.join("\n"),
    turns,
    lastUser: last?.role === "user" ? last.content : "",
    tools: Array.isArray(json.tools) ? json.tools.length : 0,
  };
}

/**
 * Whether conversation `later` continues `earlier`: the same system text, and `earlier`'s turns
 * are the start of `later`'s, which has more.
 *
 * @example
 * continuesConversation({ system: "s", turns: [1, 2, 3], lastUser: "", tools: 1 }, { system: "s", turns: [1], lastUser: "u", tools: 1 }); // true
 */
export function continuesConversation(later: RequestView, earlier: RequestView): boolean {
  if (later.system !== earlier.system || later.turns.length <= earlier.turns.length) return false;
  for (let i = 0; i < earlier.turns.length; i++) if (later.turns[i] !== earlier.turns[i]) return false;
  return true;
}
