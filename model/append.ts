/**
 * Incremental rendering, for token-in mode (docs/token-in.md): what the chat template writes
 * after an assistant message, in the context of the whole conversation — the message's
 * end-of-turn token, then the messages after it and the generation prompt.
 *
 * A proxy that keeps a conversation's token ids canonical appends these to the ids the model
 * sampled (which end with that end-of-turn token), instead of rendering the whole conversation
 * again: the template's re-rendering of an earlier turn differs from what was sampled (Qwen3
 * drops think blocks, writes its own newline before `<tool_call>`, re-serializes arguments),
 * but what it writes after the turn does not depend on the turn's content.
 *
 * How: the whole conversation is rendered once, as the engine would render it, with the
 * assistant message replaced by a stand-in — the same role, a unique marker as its whole
 * content, no tool calls, no reasoning. What follows the marker is the end-of-turn token and
 * then exactly the text the template writes for the later messages: a template decides how to
 * write a message from its own fields, the roles around it (Qwen3 opens a `user` turn for the
 * first of consecutive tool results) and whole-conversation facts such as the index of the last
 * user query, none of which the stand-in changes. `tests/reference/token-in.test.ts` holds this
 * to transformers' rendering of the real conversations.
 *
 * Rendering the whole conversation is O(conversation) Jinja per call. A template that passes a
 * probe at its first use (model/suffix-probe.ts, `suffixLocal`) is given a short conversation
 * instead (`windowOf`: the first message, the user and system messages before the answer, the
 * stand-in, what follows), and without the tools when that renders the same too.
 *
 * The end-of-turn text must be one added token of the tokenizer (Qwen3's `<|im_end|>`): Hugging
 * Face tokenizers split at added tokens before anything else, so the text after it encodes to
 * the same ids alone as it does at the end of the whole prompt.
 */
import type { PyDict, PyValue } from "./pyjson.ts";
import type { Preprocessed } from "./preprocess.ts";
import type { Tokenizer } from "./tokenizer.ts";
import { holedTextAfter, HoleCache } from "./append-holes.ts";

/** The request cannot be appended to this way; the message says why. */
export class AppendError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AppendError";
  }
}

export interface Appended {
  /** The end-of-turn text the template closes the assistant message with (the tokenizer's eos_token, Qwen3's `<|im_end|>`). */
  closer: string;
  /** Its token id. */
  closerId: number;
  /** What the template writes after it: the later messages and the generation prompt. */
  text: string;
  /** `text` encoded (`add_special_tokens=False`). */
  ids: number[];
}

/**
 * How a template may be rendered for what follows a turn: the whole conversation (false), the
 * short conversation (`windowOf`) with the request's template variables ("short"), or the
 * short conversation without the tools too ("short-no-tools": the template writes the tools
 * before the first message, which the text after a turn does not depend on).
 */
export type Window = false | "short" | "short-no-tools";

export interface AppendEnv<P extends Preprocessed> {
  render(prepared: P): string;
  /**
   * Whether the template may be given the short conversation (`windowOf`) instead of the whole
   * one: the model's probe of the template (`suffixLocal`) said its text after a turn does not
   * depend on the assistant and tool messages before the turn.
   */
  window?: (prepared: P) => Window;
  /**
   * The template's holed texts (model/append-holes.ts) when its probe (`holesExact`) said it
   * writes a tool result's strings as given; the short conversation is then rendered once per
   * shape of what follows the turn.
   */
  holes?: (prepared: P) => HoleCache | undefined;
  tokenizer: Tokenizer;
  /** The tokenizer configuration's eos_token: the text the template ends a turn with. */
  eosToken: string | undefined;
}

const markerNonce = crypto.randomUUID();

/**
 * What the template writes after `prepared.conversation[answerIndex]` (an assistant message).
 *
 * @example
 * const prepared = model.prepare({ messages: [user, assistant, toolResult] });
 * model.appendedAfter(prepared, 1).text // "\n<|im_start|>user\n<tool_response>\n…\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
 */
export function appendedAfter<P extends Preprocessed>(prepared: P, answerIndex: number, env: AppendEnv<P>): Appended {
  const conversation = prepared.conversation;
  const answer = conversation[answerIndex];
  if (!answer || answer.get("role") !== "assistant") {
    throw new AppendError(`message ${answerIndex} of the conversation the template sees is ${answer ? `a ${String(answer.get("role"))} message` : "missing"}, not the assistant message the tokens continue`);
  }
  if (prepared.continueFinalMessage) throw new AppendError("continue_final_message: the prompt ends inside its last message, so nothing is appended after a turn");
  const closer = env.eosToken;
  const closerIds = closer ? env.tokenizer.encode(closer) : [];
  if (!closer || closerIds.length !== 1 || env.tokenizer.tokenId(closer) !== closerIds[0]) {
    throw new AppendError(`the tokenizer's eos_token ${JSON.stringify(closer ?? null)} is not one added token: the text after a turn would not encode on its own as it does in the whole prompt`);
  }
  let text: string | undefined;
  const window = env.window?.(prepared) ?? false;
  if (window) {
    // The short conversation; anything it does not render as the whole one would (an error, no
    // marker) is left to the whole conversation, which says what is wrong.
    const short = window === "short-no-tools" ? withoutTools(prepared) : prepared;
    const holes = env.holes?.(prepared);
    if (holes) text = holedWindowText(holes, short, conversation, answerIndex, closer, env);
    try {
      text ??= textAfter(short, windowOf(conversation, answerIndex), closer, env);
    } catch {
      text = undefined;
    }
  }
  text ??= textAfter(prepared, standInAt(conversation, answerIndex), closer, env);
  return { closer, closerId: closerIds[0]!, text, ids: env.tokenizer.encode(text) };
}

/** The conversation with the stand-in for the answer at `answerIndex`. */
function standInAt(conversation: readonly PyDict[], answerIndex: number): { conversation: PyDict[]; marker: string } {
  const marker = `forge-answer-${markerNonce}-${answerIndex}`;
  const withStandIn = conversation.slice();
  withStandIn[answerIndex] = standIn(marker);
  return { conversation: withStandIn, marker };
}

function standIn(marker: string): PyDict {
  return new Map<string, PyValue>([
    ["role", "assistant"],
    ["content", marker],
  ]);
}

/**
 * The short conversation a suffix-local template is given: the first message, every message
 * before the answer that is neither an assistant turn nor a tool result (the user turns and
 * system messages, in order: what a template reads whole-conversation facts from, such as
 * Qwen3's index of the last user query), the stand-in, and every message after the answer as
 * it is. A tool loop's history is mostly assistant turns and tool results, so this renders a
 * few messages where the whole conversation renders all of them.
 */
export function windowOf(conversation: readonly PyDict[], answerIndex: number): { conversation: PyDict[]; marker: string } {
  const marker = `forge-answer-${markerNonce}-${answerIndex}`;
  const out = windowBefore(conversation, answerIndex);
  out.push(standIn(marker));
  for (let i = answerIndex + 1; i < conversation.length; i++) out.push(conversation[i]!);
  return { conversation: out, marker };
}

/** The short conversation's messages before the answer (`windowOf`). */
function windowBefore(conversation: readonly PyDict[], answerIndex: number): PyDict[] {
  const out: PyDict[] = [];
  for (let i = 0; i < answerIndex; i++) {
    const message = conversation[i]!;
    const role = message.get("role");
    if (i === 0 || (role !== "assistant" && role !== "tool")) out.push(message);
  }
  return out;
}

/**
 * The short conversation's text after the answer from its shape's holed text
 * (model/append-holes.ts); undefined when it has none (then it is rendered).
 */
function holedWindowText<P extends Preprocessed>(holes: HoleCache, short: P, conversation: readonly PyDict[], answerIndex: number, closer: string, env: AppendEnv<P>): string | undefined {
  const before = windowBefore(conversation, answerIndex);
  const marker = `forge-answer-${markerNonce}-holes`;
  const renderAfter = (after: PyDict[]) => textAfter(short, { conversation: [...before, standIn(marker), ...after], marker }, closer, env);
  return holedTextAfter(holes, short, before, conversation.slice(answerIndex + 1), renderAfter);
}

/** What the template writes after the stand-in's marker and the closer. */
function textAfter<P extends Preprocessed>(prepared: P, withStandIn: { conversation: PyDict[]; marker: string }, closer: string, env: AppendEnv<P>): string {
  const { marker } = withStandIn;
  const rendered = env.render({ ...prepared, conversation: withStandIn.conversation });
  const at = rendered.indexOf(marker);
  if (at < 0 || rendered.indexOf(marker, at + marker.length) >= 0) {
    throw new AppendError("the chat template does not write an assistant message's content once, as given: where a turn ends cannot be found");
  }
  const after = rendered.slice(at + marker.length);
  if (!after.startsWith(closer)) {
    throw new AppendError(`the chat template does not close an assistant message with ${JSON.stringify(closer)} right after its content (it writes ${JSON.stringify(after.slice(0, 40))})`);
  }
  return after.slice(closer.length);
}

/**
 * Whether the text after every assistant turn of `probes` is the same rendered from the short
 * conversation (`windowOf`) as from the whole one, errors included (model/suffix-probe.ts).
 */
export function suffixLocal<P extends Preprocessed>(probes: readonly P[], env: AppendEnv<P>): Window {
  const closer = env.eosToken;
  if (!closer || probes.length === 0) return false;
  if (!sameAfterEveryTurn(probes, env, closer, (p) => p)) return false;
  return sameAfterEveryTurn(probes, env, closer, withoutTools) ? "short-no-tools" : "short";
}

/** The request's template variables without `tools`. */
function withoutTools<P extends Preprocessed>(prepared: P): P {
  if (!prepared.variables.has("tools")) return prepared;
  const variables = new Map(prepared.variables);
  variables.delete("tools");
  return { ...prepared, variables };
}

/** Whether every probe's text after each assistant turn is the same from the whole conversation as from `short` of the short one. */
function sameAfterEveryTurn<P extends Preprocessed>(probes: readonly P[], env: AppendEnv<P>, closer: string, short: (p: P) => P): boolean {
  const outcome = (f: () => string) => {
    try {
      return `ok:${f()}`;
    } catch (error) {
      return `error:${(error as Error).message}`;
    }
  };
  for (const prepared of probes) {
    const conversation = prepared.conversation;
    const shortened = short(prepared);
    for (let i = 0; i < conversation.length; i++) {
      if (conversation[i]!.get("role") !== "assistant") continue;
      const whole = outcome(() => textAfter(prepared, standInAt(conversation, i), closer, env));
      const viaWindow = outcome(() => textAfter(shortened, windowOf(conversation, i), closer, env));
      if (whole !== viaWindow) return false;
    }
  }
  return true;
}

/**
 * Whether the text after every assistant turn of `probes`, filled into its shape's holed text
 * (model/append-holes.ts, rendered afresh), is the text rendered from the whole conversation:
 * the template writes tool results' strings as given (and each marker whole). A turn the whole
 * conversation cannot be rendered after must have no holed text either.
 */
export function holesExact<P extends Preprocessed>(probes: readonly P[], env: AppendEnv<P>, window: Window): boolean {
  const closer = env.eosToken;
  if (!closer || !window || probes.length === 0) return false;
  for (const prepared of probes) {
    const conversation = prepared.conversation;
    const short = window === "short-no-tools" ? withoutTools(prepared) : prepared;
    for (let i = 0; i < conversation.length; i++) {
      if (conversation[i]!.get("role") !== "assistant") continue;
      let whole: string | undefined;
      try {
        whole = textAfter(prepared, standInAt(conversation, i), closer, env);
      } catch {
        whole = undefined;
      }
      const holes = new HoleCache();
      let filled: string | undefined;
      try {
        filled = holedWindowText(holes, short, conversation, i, closer, env);
      } catch {
        return false;
      }
      if (holes.refused() || (filled !== undefined && filled !== whole)) return false;
    }
  }
  return true;
}
