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
 * The end-of-turn text must be one added token of the tokenizer (Qwen3's `<|im_end|>`): Hugging
 * Face tokenizers split at added tokens before anything else, so the text after it encodes to
 * the same ids alone as it does at the end of the whole prompt.
 */
import type { PyValue } from "./pyjson.ts";
import type { Preprocessed } from "./preprocess.ts";
import type { Tokenizer } from "./tokenizer.ts";

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

interface AppendEnv<P extends Preprocessed> {
  render(prepared: P): string;
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
  const marker = `forge-answer-${markerNonce}-${answerIndex}`;
  const standIn = new Map<string, PyValue>([
    ["role", "assistant"],
    ["content", marker],
  ]);
  const withStandIn = conversation.slice();
  withStandIn[answerIndex] = standIn;
  const rendered = env.render({ ...prepared, conversation: withStandIn });
  const at = rendered.indexOf(marker);
  if (at < 0 || rendered.indexOf(marker, at + marker.length) >= 0) {
    throw new AppendError("the chat template does not write an assistant message's content once, as given: where a turn ends cannot be found");
  }
  const after = rendered.slice(at + marker.length);
  if (!after.startsWith(closer)) {
    throw new AppendError(`the chat template does not close an assistant message with ${JSON.stringify(closer)} right after its content (it writes ${JSON.stringify(after.slice(0, 40))})`);
  }
  const text = after.slice(closer.length);
  return { closer, closerId: closerIds[0]!, text, ids: env.tokenizer.encode(text) };
}
