/**
 * vLLM's preprocessing of a chat request, before the chat template runs, written from vLLM
 * 0.33.0 (`vllm/entrypoints/openai/chat_completion/protocol.py`: `ChatCompletionRequest`'s
 * message normalization and `build_chat_params`; `vllm/renderers/chat_utils/chat_message.py`:
 * `parse_chat_messages`, `parse_chat_message_content`, `_postprocess_messages`;
 * `vllm/renderers/hf.py`: `safe_apply_chat_template`'s developer-role handling;
 * `vllm/renderers/online_renderer.py`: `render_chat` / `preprocess_chat`). docs/model.md lists
 * the steps.
 *
 * The messages come as a harness sent them (OpenAI chat JSON parsed by JavaScript); the
 * result is the "conversation" vLLM gives the template, as Python values.
 */
import { randomBytes } from "node:crypto";
import type { VisionProcessor } from "./vision.ts";
import { PyFloat, fromJs, tryPyLoads, type PyDict, type PyValue } from "./pyjson.ts";

/** The fields of a chat request that decide the rendered prompt. */
export interface ChatRenderRequest {
  messages: readonly unknown[];
  tools?: readonly unknown[] | null;
  /** vLLM's default is true. */
  add_generation_prompt?: boolean | null;
  continue_final_message?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  reasoning_effort?: string | null;
  documents?: readonly unknown[] | null;
  /** A template sent with the request: vLLM refuses it unless started with --trust-request-chat-template. */
  chat_template?: string | null;
}

/** apply_chat_template's own parameters: passed in chat_template_kwargs they steer it, they are no template variables. */
const APPLY_CHAT_TEMPLATE_PARAMS = new Set(["conversation", "chat_template", "tokenize", "padding", "truncation", "max_length", "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs"]);

/** A request vLLM would answer with 400; `param` names the field. */
export class ChatRequestError extends Error {
  constructor(
    message: string,
    readonly param?: string,
  ) {
    super(message);
    this.name = "ChatRequestError";
  }
}

/** How image content parts become text (a text-only model such as Qwen3 rejects them). */
export interface ImageHandling {
  /** The placeholder vLLM's multimodal processor writes for one image (Qwen-VL: `<|vision_start|><|image_pad|><|vision_end|>`). */
  placeholder: string;
  /**
   * The token the processor repeats once per merged patch (`<|image_pad|>`) and the processor's
   * sizes (model/vision.ts): the prompt ids then hold as many of it per image as the model sees.
   * Without it, one per image (the text as rendered).
   */
  expand?: { token: string; processor: VisionProcessor };
  /** The model directory's image processor when model/vision.ts does not implement it (no `expand`): what a refusal names. */
  unsupported?: string;
}

export interface PreprocessOptions {
  /** The model's name in vLLM's "is not a multimodal model" error. */
  modelName?: string;
  /** Without it, an image part is the error vLLM gives for a text-only model. */
  images?: ImageHandling;
  /** Whether the template names the `developer` role (else developer turns become system). */
  templateKnowsDeveloper?: boolean;
  /**
   * vLLM's chat template content format: "string" (default: content parts joined into one text,
   * the placeholders before it) or "openai" (a template that loops over `message['content']`,
   * such as Qwen2-VL's and Qwen2.5-VL's: content is the list of parts in order,
   * `{"type": "text", "text"}` and `{"type": "image"}`; `wrap_dicts` in
   * `renderers/chat_utils/chat_message.py`).
   */
  contentFormat?: "string" | "openai";
  /**
   * Messages and tool lists already preprocessed with these options, by their JSON text: a
   * harness resends the whole history on every call, so a call preprocesses only the messages it
   * appends (docs/performance.md, issue 32). The dicts are shared between calls: nothing
   * downstream changes them.
   */
  cache?: PreprocessCache;
  /**
   * The messages of the conversation's last call (filled in by this call for its next): each
   * message the same as the one at its place there, field for field, is that call's dict, with
   * no JSON text written for it; the rest go through `cache`.
   */
  previous?: PreviousMessages;
  /**
   * The messages as the harness sent them, as bytes: where each lies in the request's body
   * (the Chat door has them for a body it scanned). With `previous`, the previous call's messages
   * are then known unchanged by one digest of their bytes instead of a walk of each (a long
   * rollout resends hundreds; docs/performance.md, issue 32's fourteenth session).
   */
  rawMessages?: RawMessages;
}

/** The byte spans of a request's messages in its body, one per message, in order (and of its tools, when it has a list). */
export interface RawMessages {
  bytes: Uint8Array;
  spans: readonly { start: number; end: number }[];
  tools?: { start: number; end: number };
}

/** A 128-bit digest of the bytes of a conversation's first `count` messages as sent (from the first's start to the last's end). */
export interface MessagesDigest {
  count: number;
  key: bigint;
  check: bigint;
}

/**
 * A conversation's last call's messages as sent (copies, their strings shared) and as
 * preprocessed, place by place; `chars` counts their strings (what holding them costs).
 */
export interface PreviousMessages {
  raws: unknown[];
  dicts: PyDict[];
  images: string[][];
  chars: number[];
  /** The digest of all of them as sent, when the call had their bytes (`rawMessages`). */
  digest?: MessagesDigest;
  /** The call's tool list as preprocessed, and the digest of its bytes as sent (count 1), when the call had them. */
  tools?: { dicts: PyDict[]; digest: MessagesDigest };
}

/** An empty PreviousMessages. */
export function noPreviousMessages(): PreviousMessages {
  return { raws: [], dicts: [], images: [], chars: [], digest: undefined, tools: undefined };
}

// Seeds drawn per process: what a digest is of cannot be aimed at from outside (a harness is untrusted).
const DIGEST_KEY_SEED = randomBytes(8).readBigUInt64LE();
const DIGEST_CHECK_SEED = randomBytes(8).readBigUInt64LE();

/** The digest of the first `count` messages' bytes (count ≥ 1, at most the spans'). */
function messagesDigest(raw: RawMessages, count: number): MessagesDigest {
  return bytesDigest(raw.bytes.subarray(raw.spans[0]!.start, raw.spans[count - 1]!.end), count);
}

function bytesDigest(bytes: Uint8Array, count: number): MessagesDigest {
  return { count, key: Bun.hash.xxHash3(bytes, DIGEST_KEY_SEED), check: Bun.hash.xxHash3(bytes, DIGEST_CHECK_SEED) };
}

/**
 * The request's tool list as preprocessed: the previous call's when its bytes are the same (one
 * digest), else `parse`'s; kept in `previous` for the next call.
 */
function toolsOf(options: PreprocessOptions, parse: () => PyDict[]): PyDict[] {
  const { previous, rawMessages } = options;
  const span = rawMessages?.tools;
  const digest = span && previous ? bytesDigest(rawMessages.bytes.subarray(span.start, span.end), 1) : undefined;
  const known = previous?.tools;
  if (digest && known && known.digest.key === digest.key && known.digest.check === digest.check) return known.dicts;
  const dicts = parse();
  if (previous) previous.tools = digest ? { dicts, digest } : undefined;
  return dicts;
}

/**
 * Whether the request's first `previous.digest.count` messages are, byte for byte, the previous
 * call's messages (its whole conversation): then each parses to what the previous call's did.
 */
function previousUnchanged(previous: PreviousMessages, raw: RawMessages | undefined, messages: readonly unknown[]): boolean {
  const d = previous.digest;
  if (!d || !raw || raw.spans.length !== messages.length || d.count !== previous.raws.length || d.count > messages.length || d.count === 0) return false;
  const now = messagesDigest(raw, d.count);
  return now.key === d.key && now.check === d.check;
}

/**
 * A bounded cache of preprocessed messages and tool lists (its key text counted against
 * `maxChars`; the oldest entries go first). What it holds is about twice its key text (the key,
 * and the dicts' strings): 4 M characters, ~8–16 MiB at most per template. A shard whose open
 * conversations' recent messages exceed it misses (each message then costs its JSON text on top
 * of its preprocessing), and is still correct.
 */
export class PreprocessCache {
  private readonly messages = new Map<string, { dict: PyDict; images: string[] }>();
  private readonly tools = new Map<string, PyDict[]>();
  private chars = 0;
  constructor(readonly maxChars = 4 * 1024 * 1024) {}

  /**
   * The dict of a message sent before, or `parse` of it; a new one is kept once `pending` is
   * committed (`commit`), after the request's preprocessing has checked it.
   */
  message(raw: unknown, parse: (images: string[]) => PyDict, images: string[], pending: PendingMessage[]): PyDict {
    const key = jsonKey(raw);
    const hit = key === undefined ? undefined : this.messages.get(key);
    if (hit) {
      for (const image of hit.images) images.push(image);
      return hit.dict;
    }
    const own: string[] = [];
    const dict = parse(own);
    for (const image of own) images.push(image);
    pending.push({ key, entry: { dict, images: own } });
    return dict;
  }

  /** Keeps the messages `message` preprocessed anew (but those JSON cannot hold exactly). */
  commit(pending: readonly PendingMessage[]): void {
    for (const { key, entry } of pending) if (key !== undefined) this.add(this.messages, key, entry);
  }

  toolList(raw: readonly unknown[], parse: () => PyDict[]): PyDict[] {
    const key = jsonKey(raw);
    if (key === undefined) return parse();
    const hit = this.tools.get(key);
    if (hit) return hit;
    const tools = parse();
    this.add(this.tools, key, tools);
    return tools;
  }

  private add<V>(map: Map<string, V>, key: string, value: V): void {
    if (key.length > this.maxChars) return;
    // A message sent twice in one request is committed twice: counted once.
    if (map.has(key)) map.delete(key);
    else this.chars += key.length;
    map.set(key, value);
    while (this.chars > this.maxChars) {
      const oldest = this.messages.size > 0 ? this.messages : this.tools;
      const first = oldest.keys().next().value as string;
      oldest.delete(first);
      this.chars -= first.length;
    }
  }
}

/** A message preprocessed anew, kept by `PreprocessCache.commit`. */
export interface PendingMessage {
  /** Undefined for a message JSON cannot hold exactly (not kept). */
  key: string | undefined;
  entry: { dict: PyDict; images: string[] };
}

/** A JSON value's text (undefined for what JSON cannot hold exactly, which is then not cached). */
function jsonKey(raw: unknown): string | undefined {
  try {
    return JSON.stringify(raw);
  } catch {
    return undefined;
  }
}

export interface Preprocessed {
  /** The messages the template sees (`messages`). */
  conversation: PyDict[];
  /** The template's variables besides `messages` (tools, add_generation_prompt, kwargs). */
  variables: Map<string, PyValue>;
  /** transformers' continue_final_message (the prompt ends inside the last message). */
  continueFinalMessage: boolean;
  /** Each image part's source (its URL, a `data:` URL for inline images), in prompt order. */
  images: string[];
}

const TEXT_PARTS = new Set(["text", "input_text", "output_text", "refusal", "thinking"]);
const IMAGE_PARTS = new Set(["image_url", "input_image", "image_pil", "image_embeds"]);
const MEDIA_PARTS = new Set(["audio_url", "input_audio", "audio_embeds", "video_url", "video_embeds", "prompt_embeds"]);
const TYPELESS_MEDIA_KEYS = ["image_url", "image_pil", "image_embeds", "audio_embeds", "video_embeds", "prompt_embeds", "audio_url", "input_audio", "video_url"];
const CLAUDE_CODE_BILLING_HEADER = "x-anthropic-billing-header";
/** Values merge_kwargs treats as unset (vllm/renderers/params.py). */
const isUnset = (v: unknown) => v === null || v === undefined || v === "auto";

/**
 * A chat request as vLLM 0.33.0 hands it to the chat template.
 *
 * @example
 * const { conversation } = preprocessChat({ messages: [{ role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { name: "ls", arguments: '{"path":"."}' } }] }] });
 * pyDumps(conversation[0]!.get("tool_calls")); // '[{"id": "a", "type": "function", "function": {"name": "ls", "arguments": {"path": "."}}}]'
 */
export function preprocessChat(request: ChatRenderRequest, options: PreprocessOptions = {}): Preprocessed {
  const addGenerationPrompt = request.add_generation_prompt ?? true;
  const continueFinalMessage = request.continue_final_message ?? false;
  if (continueFinalMessage && addGenerationPrompt) {
    throw new ChatRequestError("Cannot set both `continue_final_message` and `add_generation_prompt` to True.");
  }
  const images: string[] = [];
  const cache = options.cache;
  let conversation = messagesOf(request.messages, options, images);
  // The raw messages' roles are the dicts' (each checked a string by now): plain reads, not a Map lookup each.
  if (!options.templateKnowsDeveloper && request.messages.some((m) => (m as { role?: unknown }).role === "developer")) {
    conversation = consolidateSystemMessages(conversation.map(developerToSystem));
  }

  // build_chat_params: the request's kwargs, then its own fields over them (unset ones skipped).
  const kwargs = new Map<string, PyValue>();
  const userKwargs = request.chat_template_kwargs ?? {};
  if (request.chat_template != null || userKwargs.chat_template != null) {
    throw new ChatRequestError("Chat template is passed with request, but --trust-request-chat-template is not set. Refused request with untrusted chat template.");
  }
  for (const [k, v] of Object.entries(userKwargs)) if (!APPLY_CHAT_TEMPLATE_PARAMS.has(k)) kwargs.set(k, fromJs(v));
  const extra: [string, unknown][] = [
    ["add_generation_prompt", addGenerationPrompt],
    ["continue_final_message", continueFinalMessage],
    ["documents", request.documents],
    ["reasoning_effort", request.reasoning_effort],
  ];
  if (!isUnset(request.reasoning_effort) && !("enable_thinking" in userKwargs)) extra.push(["enable_thinking", request.reasoning_effort !== "none"]);
  for (const [k, v] of extra) if (!isUnset(v)) kwargs.set(k, fromJs(v));
  // with_defaults: the tool dicts under the request's kwargs.
  const toolDicts = (list: readonly unknown[]) => list.map((tool, i) => toolDict(tool, i));
  const tools = request.tools == null ? null : Array.isArray(request.tools) ? toolsOf(options, () => (cache ? cache.toolList(request.tools!, () => toolDicts(request.tools!)) : toolDicts(request.tools!))) : toolDicts(request.tools);
  const variables = new Map<string, PyValue>();
  if (tools !== null || !kwargs.has("tools")) variables.set("tools", tools);
  for (const [k, v] of kwargs) if (k !== "tools" || tools === null) variables.set(k, v);
  // transformers passes documents and add_generation_prompt explicitly; continue_final_message
  // is its own argument, not a template variable.
  if (!variables.has("documents")) variables.set("documents", null);
  variables.delete("continue_final_message");
  return { conversation, variables, continueFinalMessage, images };
}

/**
 * The messages as the template gets them: each the previous call's dict at its place when it is
 * the same message, else the cache's, else parsed. Only the messages parsed anew are
 * post-processed (a dict kept was, before it was kept): the first that fails is the
 * conversation's first that fails. Images are collected in order.
 */
function messagesOf(messages: readonly unknown[], options: PreprocessOptions, images: string[]): PyDict[] {
  const { cache, previous, rawMessages } = options;
  const pending: PendingMessage[] = [];
  const fresh: PyDict[] = [];
  const own: string[][] = [];
  const reused: boolean[] = [];
  // A growing conversation resends the previous call's messages as they were: one digest of their bytes says so.
  const unchanged = previous !== undefined && previousUnchanged(previous, rawMessages, messages);
  const conversation = messages.map((message, i) => {
    if (previous && i < previous.raws.length && (unchanged || sameJson(previous.raws[i], message))) {
      reused.push(true);
      own.push(previous.images[i]!);
      for (const image of previous.images[i]!) images.push(image);
      return previous.dicts[i]!;
    }
    reused.push(false);
    const mine: string[] = [];
    const before = pending.length;
    // A message with a tool call's id is its rollout's own (the ids are the proxy's, random): with
    // the previous call's messages it is found there, so the shared cache is not asked (nor filled).
    const shared = cache && !(previous && ownToRollout(message)) ? cache : undefined;
    const dict = shared ? shared.message(message, (o) => parseMessage(message, i, options, o), mine, pending) : parseMessage(message, i, options, mine);
    if (!shared || pending.length > before) fresh.push(dict);
    own.push(mine);
    for (const image of mine) images.push(image);
    return dict;
  });
  postprocessToolCalls(fresh);
  cache?.commit(pending);
  if (previous) {
    const raws = conversation.map((dict, i) => (reused[i] ? previous.raws[i] : copyMessage(messages[i], dict)));
    const chars = conversation.map((_, i) => (reused[i] ? previous.chars[i]! : stringChars(raws[i])));
    const digest = rawMessages && rawMessages.spans.length === messages.length && messages.length > 0 ? messagesDigest(rawMessages, messages.length) : undefined;
    Object.assign(previous, { raws, dicts: conversation, images: own, chars, digest });
  }
  return conversation;
}

/** Whether a message as sent carries a tool call's id (a tool result, an assistant turn with calls). */
function ownToRollout(message: unknown): boolean {
  if (!isObject(message)) return false;
  return (message.role === "tool" && message.tool_call_id != null) || (message.role === "assistant" && Array.isArray(message.tool_calls) && message.tool_calls.length > 0);
}

/**
 * A copy of a message as sent, its content the dict's string when they are the same text: a
 * message the cache gave a dict made from another request's copy of it holds that one string.
 */
function copyMessage(raw: unknown, dict: PyDict): unknown {
  const copy = copyJson(raw);
  const content = dict.get("content");
  if (copy && typeof copy === "object" && !Array.isArray(copy) && typeof (copy as Record<string, unknown>).content === "string" && content === (copy as Record<string, unknown>).content) {
    (copy as Record<string, unknown>).content = content;
  }
  return copy;
}

/** A copy of a plain JSON value (its strings shared): what a request's body becomes later does not change what was kept. */
function copyJson(v: unknown): unknown {
  if (typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) return v.map(copyJson);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = copyJson((v as Record<string, unknown>)[k]);
  return out;
}

/** The characters of a JSON value's strings (keys included). */
function stringChars(v: unknown): number {
  if (typeof v === "string") return v.length;
  if (typeof v !== "object" || v === null) return 0;
  let n = 0;
  if (Array.isArray(v)) for (const item of v) n += stringChars(item);
  else for (const k of Object.keys(v)) n += k.length + stringChars((v as Record<string, unknown>)[k]);
  return n;
}

/** Whether two JSON values are the same: the same keys in the same order, the same strings, numbers and literals. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  // b's keys walked with for…in (JSC caches its key list per object shape) against a's, in
  // order: one key array per object pair instead of two. An inherited enumerable key (not
  // JSON's) makes the message differ, so it is preprocessed afresh.
  const ka = Object.keys(a);
  let i = 0;
  for (const k in b) {
    if (k !== ka[i] || !Object.hasOwn(b, k) || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
    i++;
  }
  return i === ka.length;
}

/** `tool.model_dump()` of vLLM's ChatCompletionToolsParam: only its fields, null for unset ones. */
function toolDict(tool: unknown, index: number): PyDict {
  const where = `tools[${index}]`;
  if (!isObject(tool)) throw new ChatRequestError(`${where}: expected an object`, "tools");
  const fn = tool.function;
  if (tool.type !== undefined && tool.type !== "function") throw new ChatRequestError(`${where}.type: expected "function"`, "tools");
  if (!isObject(fn) || typeof fn.name !== "string") throw new ChatRequestError(`${where}.function.name: expected a string`, "tools");
  const fnDict: PyDict = new Map<string, PyValue>([
    ["name", fn.name],
    ["description", typeof fn.description === "string" ? fn.description : null],
    ["parameters", isObject(fn.parameters) ? fromJs(fn.parameters) : null],
  ]);
  if (fn.strict != null) fnDict.set("strict", fromJs(fn.strict));
  const deferLoading = fn.defer_loading ?? tool.defer_loading;
  if (deferLoading != null) fnDict.set("defer_loading", fromJs(deferLoading));
  const dict: PyDict = new Map<string, PyValue>([
    ["type", "function"],
    ["function", fnDict],
  ]);
  if (tool.defer_loading != null) dict.set("defer_loading", fromJs(tool.defer_loading));
  return dict;
}

/** parse_chat_message_content with the "string" content format (Qwen3's template reads content as text). */
function parseMessage(message: unknown, index: number, options: PreprocessOptions, images: string[]): PyDict {
  if (!isObject(message) || typeof message.role !== "string") throw new ChatRequestError(`messages[${index}].role: expected a string`, "messages");
  const role = message.role;
  // ChatCompletionRequest renames reasoning_content to reasoning (reasoning wins when both are set).
  const reasoning = message.reasoning ?? message.reasoning_content ?? null;
  let parts: unknown[];
  if (message.content == null) parts = [];
  else if (typeof message.content === "string") parts = [{ type: "text", text: message.content }];
  else if (Array.isArray(message.content)) parts = message.content;
  else throw new ChatRequestError(`messages[${index}].content: expected a string or a list of content parts`, "messages");
  if (role === "system") parts = stripBillingHeader(parts);
  const texts: string[] = [];
  const wrapped: PyDict[] = [];
  let imageCount = 0;
  for (const part of parts) {
    const text = partText(part, index, options);
    if (text === IMAGE) {
      imageCount++;
      images.push(imageSource(part));
      wrapped.push(new Map<string, PyValue>([["type", "image"]]));
    } else if (text !== undefined) {
      if (text) texts.push(text);
      wrapped.push(new Map<string, PyValue>([["type", "text"], ["text", text]]));
    }
  }
  let content: PyValue = texts.join("\n");
  if (options.contentFormat === "openai") content = wrapped;
  else if (imageCount > 0) content = [...Array<string>(imageCount).fill(options.images!.placeholder), ...(content ? [content] : [])].join("\n");
  const out: PyDict = new Map<string, PyValue>([
    ["role", role],
    ["content", content],
  ]);
  if (role === "assistant") {
    if (message.tool_calls != null) {
      if (!Array.isArray(message.tool_calls)) throw new ChatRequestError(`messages[${index}].tool_calls: expected a list`, "messages");
      out.set("tool_calls", message.tool_calls.map(toolCallDict));
    }
    if (reasoning !== null) {
      if (typeof reasoning !== "string") throw new ChatRequestError(`messages[${index}].reasoning: expected a string`, "messages");
      out.set("reasoning", reasoning);
      out.set("reasoning_content", reasoning);
    }
  } else if (role === "tool" && "tool_call_id" in message) {
    out.set("tool_call_id", fromJs(message.tool_call_id));
  }
  if (typeof message.name === "string") out.set("name", message.name);
  if (typeof message.task === "string") out.set("task", message.task);
  if (role === "developer") out.set("tools", message.tools == null ? null : fromJs(message.tools));
  return out;
}

const IMAGE = Symbol("image");

/** An image part's URL (`image_url: {url}` or a string, Responses' `input_image`); "" when it has none (embeddings). */
function imageSource(part: unknown): string {
  if (!isObject(part)) return "";
  const value = part.image_url;
  if (typeof value === "string") return value;
  if (isObject(value) && typeof value.url === "string") return value.url;
  return "";
}

/** One content part as text (vLLM's parse_chat_message_content_part, string format). */
function partText(part: unknown, index: number, options: PreprocessOptions): string | typeof IMAGE | undefined {
  if (typeof part === "string") return part;
  if (!isObject(part)) throw new ChatRequestError(`messages[${index}].content: expected content parts to be objects`, "messages");
  let type = part.type;
  if (type === undefined || part.uuid != null) {
    const key = [...TYPELESS_MEDIA_KEYS, "tool_reference"].find((k) => k in part);
    if (!key) throw new ChatRequestError("Missing 'type' field in multimodal part.", "type");
    type = key;
  }
  if (typeof type !== "string") throw new ChatRequestError("Invalid 'type' field in multimodal part.", "type");
  if (TEXT_PARTS.has(type)) {
    const text = type === "thinking" ? part.thinking : type === "refusal" ? part.refusal : part.text;
    return typeof text === "string" ? text : undefined;
  }
  if (type === "tool_reference") return typeof part.name === "string" ? part.name : undefined;
  if (IMAGE_PARTS.has(type)) {
    if (!options.images) throw new ChatRequestError(`${options.modelName ?? "the model"} is not a multimodal model`, "messages");
    return IMAGE;
  }
  if (MEDIA_PARTS.has(type)) throw new ChatRequestError(`${options.modelName ?? "the model"} is not a multimodal model`, "messages");
  throw new ChatRequestError(`Unsupported chat content part type: '${type}'.`, "type");
}

/** Claude Code's attribution line changes on every request; vLLM drops it from system text. */
function stripBillingHeader(parts: unknown[]): unknown[] {
  const out: unknown[] = [];
  for (const part of parts) {
    const text = typeof part === "string" ? part : isObject(part) && part.type === "text" ? part.text : undefined;
    if (!(typeof text === "string" && text.startsWith(CLAUDE_CODE_BILLING_HEADER))) {
      out.push(part);
      continue;
    }
    const newline = text.indexOf("\n");
    const rest = newline < 0 ? "" : text.slice(newline + 1);
    if (!rest) continue;
    out.push(typeof part === "string" ? rest : { ...(part as object), text: rest });
  }
  return out;
}

function toolCallDict(call: unknown): PyValue {
  if (!isObject(call)) return fromJs(call);
  const out: PyDict = new Map();
  for (const [k, v] of Object.entries(call)) {
    if (k === "function" && isObject(v)) {
      const fn: PyDict = new Map();
      for (const [fk, fv] of Object.entries(v)) fn.set(fk, fk === "arguments" && typeof fv === "string" ? fv : fromJs(fv));
      out.set(k, fn);
    } else if (v !== undefined) out.set(k, fromJs(v));
  }
  return out;
}

/** _postprocess_messages: tool-call argument strings become dicts (json.loads; anything else {}). */
function postprocessToolCalls(conversation: PyDict[]): void {
  for (const message of conversation) {
    if (message.get("role") !== "assistant" || !message.has("tool_calls")) continue;
    const calls = message.get("tool_calls");
    if (!Array.isArray(calls)) continue;
    if (calls.length === 0) {
      message.delete("tool_calls");
      continue;
    }
    for (const item of calls) {
      if (!(item instanceof Map)) throw new ChatRequestError("assistant tool_calls entries must be objects.", "tool_calls");
      const fn = item.get("function");
      if ((item.has("type") ? item.get("type") : "function") !== "function" || !(fn instanceof Map)) {
        throw new ChatRequestError("chat completions only support assistant tool_calls of type 'function'.", "tool_calls");
      }
      const args = fn.get("arguments");
      let parsed: PyValue | undefined = undefined;
      if (truthy(args)) parsed = typeof args === "string" ? tryPyLoads(args) : args;
      fn.set("arguments", parsed instanceof Map ? parsed : new Map());
    }
  }
}

/** Python truthiness of a JSON value. */
function truthy(value: PyValue | undefined): boolean {
  if (value === null || value === undefined || value === false || value === "" || value === 0 || value === 0n) return false;
  if (value instanceof PyFloat) return value.value !== 0;
  if (Array.isArray(value)) return value.length > 0;
  if (value instanceof Map) return value.size > 0;
  return true;
}

function developerToSystem(message: PyDict): PyDict {
  if (message.get("role") !== "developer") return message;
  const out = new Map(message);
  out.set("role", "system");
  out.delete("tools");
  return out;
}

/** _consolidate_system_messages: every system message merged into one at the front. */
function consolidateSystemMessages(conversation: PyDict[]): PyDict[] {
  const systems: string[] = [];
  const rest: PyDict[] = [];
  let needed = false;
  conversation.forEach((message, i) => {
    if (message.get("role") !== "system") {
      rest.push(message);
      return;
    }
    if (i > 0 || systems.length > 0) needed = true;
    const content = message.get("content");
    if (typeof content === "string" && content) systems.push(content);
  });
  if (!needed) return conversation;
  return [
    new Map<string, PyValue>([
      ["role", "system"],
      ["content", systems.join("\n\n")],
    ]),
    ...rest,
  ];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

