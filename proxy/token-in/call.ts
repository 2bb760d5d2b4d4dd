/**
 * One token-in call (docs/token-in.md): the Chat request a front door prepared is rendered by
 * the proxy into the prompt ids of its chain (plan.ts), sent to the engine as token ids
 * (engine-request.ts), and the engine's answer comes back as the Chat answer vLLM's chat route
 * would give for those tokens (chat-answer.ts), for the pipeline to capture, strip, translate
 * and record as any Chat answer. Its record says which chain it continues, or why it starts
 * one, and what the harness was sent; once recorded with complete ids the chain goes on from it.
 * A prompt with images (images.ts) goes to the engine with its images and is recorded as the
 * engine ran it (expanded), checked against the proxy's own expansion.
 */
import { TokenMode, TokenStatus, CallStatus, type ModelCall, type SamplingParams } from "../../schemas/index.ts";
import { ChatRequestError, ChatTemplateError, type Model, type ModelSpec } from "../../model/index.ts";
import { joinIds, startsWithIds, type TokenIds } from "../../records/index.ts";
import { ProxyHttpError } from "../errors.ts";
import { samplingOf } from "../engines/sampling.ts";
import type { EngineState } from "../engines/check.ts";
import type { RolloutState } from "../state/rollouts.ts";
import { newRolloutChains, useChain } from "../state/chains.ts";
import { withSampling } from "../state/serving.ts";
import { rawMessagesOf, restoreHidden } from "../doors/hidden-strings.ts";
import { chainAfter } from "./chain-after.ts";
import { restoreChains, RESTART_LOST } from "./restore.ts";
import { planCall, type Plan } from "./plan.ts";
import { engineRequest, VLLM_GENERATE_PATH, type TokenInRoute } from "./engine-request.ts";
import { callImages, echoProblem } from "./images.ts";
import { engineAnswerReader, type EngineAnswerReader } from "./engine-answer.ts";
import { IDS_PLACEHOLDER, withIdsBytes } from "./ids-text.ts";
import { chainPromptText, keepPromptText } from "./prompt-texts.ts";
import { heldMessages, previousMessages } from "./previous-messages.ts";
import { chatJsonAnswer, chatStreamResponse, type ChatAnswerContext, type SentAnswer } from "./chat-answer.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const NO_ENDS = new Uint32Array(0);

/** ModelCall fields 50-57 (records.proto); and a token status the call's images make PARTIAL (images.ts). */
export type TokenInFields = Pick<ModelCall, "tokenMode" | "chainId" | "chainParent" | "chainStart" | "chainStartDetail" | "renderedTokens" | "engineRequest" | "chainAnswer"> & Partial<Pick<ModelCall, "tokenStatus" | "tokenStatusReason">>;

/** What a recorded token-in call adds to its ModelCall, and what happens once it is recorded. */
export interface TokenInRecord {
  /** The ModelCall fields 50-57. */
  fields(): TokenInFields;
  /**
   * A prefix the call's recorded prompt is known to begin with (records/prompt-delta.ts,
   * `isViewPrefix`): the chain's ids the plan continued, when `prompt` is the plan's own.
   */
  knownPrefix(prompt: TokenIds | undefined): TokenIds | undefined;
  /** After the append: the chain moves on to this call when its ids are complete; `prompt`: the prompt ids recorded. */
  recorded(call: ModelCall, rollout: RolloutState, prompt: TokenIds | undefined): void;
}

export interface TokenInCall extends TokenInRecord {
  /** The engine route: "/v1/completions", "/generate", or vLLM's "/inference/v1/generate" (images). */
  path: string;
  /** The engine request. */
  bytes: Uint8Array;
  /** The Chat request the prompt was rendered from (the harness's, with the rollout's sampling). */
  chatBody: Record<string, any>;
  sampling: SamplingParams;
  /**
   * The engine's answer as a Chat answer (JSON or SSE); an error answer passes as it came.
   * `objects`: the caller reads a streamed answer as chunk objects only (capture/chunk-source.ts,
   * `chunkSourceResponse`), so no byte stream is made for it.
   */
  chatResponse(engine: Response, o?: { objects?: boolean }): Response;
  plan: Plan;
}

export interface PrepareInput {
  rollout: RolloutState;
  /** The Chat request the front door prepared (its upstream body). */
  chat: Record<string, any>;
  callId: string;
  engine: EngineState;
  /** The engine's context length (max_model_len). */
  maxModelLen: number;
  /** Where a vLLM engine gets the call (default "completions"). */
  route?: TokenInRoute;
  /**
   * Set when the route is generate because `--token-in-route auto` found it served: called when
   * the engine refuses it after all (403 or 404), whose error then says so.
   */
  onRouteRefused?: () => void;
}

/**
 * Plans a token-in call.
 *
 * @example
 * const call = await prepareTokenInCall(model, { rollout, chat: prepared.upstreamBody, callId, engine: ctx.engine, maxModelLen: 32768 });
 * await client.send({ rolloutId, path: call.path, method: "POST", body: call.bytes }); // then call.chatResponse(answer)
 */
export async function prepareTokenInCall(model: Model, input: PrepareInput): Promise<TokenInCall> {
  const { rollout, callId, engine } = input;
  const chat = withSampling(restoreHidden(input.chat), rollout.serving?.sampling);
  const { prepared, plan } = await planForRollout(model, rollout, chat);
  const kind = engine.adapter.kind === "sglang" ? "sglang" : "vllm";
  const topLogprobs = chat.logprobs === true && typeof chat.top_logprobs === "number" ? chat.top_logprobs : 0;
  // The plan's ids as they are (a Uint32Array: the engine body gets them as text, the parsers and the answer read them by index).
  const promptIds = plan.prompt;
  // Written on from the text of the chain's last prompt when it is kept (prompt-texts.ts).
  const promptText = chainPromptText(promptIds, plan.chain?.tokens);
  // The chain's ids hold one pad per image; the engine expands them (images.ts).
  const images = callImages(model, prepared, promptIds);
  const req = engineRequest(kind, chat, promptIds, { maxModelLen: input.maxModelLen, topLogprobs, images: images?.sources, expandedLength: images?.expanded.length, route: input.route });
  if (kind === "vllm" && req.path !== VLLM_GENERATE_PATH && rollout.serving?.upstreams.length) {
    // Served by the rollout's own servers: the call records the version they report (capture/served-version.ts).
    (req.body as Record<string, unknown>).return_weight_versions = true;
    (req.recorded as Record<string, unknown>).return_weight_versions = true;
  }
  let answer: SentAnswer | undefined;
  // With images the answer's prompt is the one the engine echoes (expanded), held to the proxy's expansion.
  let echoed: ArrayLike<number> | undefined;
  const reader = engineAnswerReader(kind, { top: chat.logprobs === true, generate: req.path === VLLM_GENERATE_PATH });
  const context: ChatAnswerContext = {
    model,
    options: { ...chat, promptTokenIds: images ? images.expanded : promptIds } as never,
    modelName: String(chat.model ?? ""),
    prompt: images ? images.expanded : promptIds,
    ...(images ? {} : { promptText }),
    logprobs: chat.logprobs === true,
    topLogprobs,
    continuousUsage: chat.stream_options?.include_usage === true && chat.stream_options?.continuous_usage_stats === true,
    reader: images ? echoReader(reader, (ids) => (echoed ??= ids)) : reader,
    onAnswer: (a) => (answer = a),
  };
  const chainId = plan.chain?.id ?? callId;
  /** A call with images whose engine ran another prompt than the proxy's expansion: PARTIAL, and why. */
  const imageVerdict = (): Partial<TokenInFields> => {
    if (!images || !answer) return {};
    const problem = echoProblem(images.expanded, echoed);
    return problem ? { tokenStatus: TokenStatus.PARTIAL, tokenStatusReason: problem } : {};
  };
  return {
    path: req.path,
    // The prompt ids as the text already written for them (ids-text.ts).
    bytes: withIdsBytes(JSON.stringify({ ...req.body, [req.promptKey]: IDS_PLACEHOLDER }), promptText),
    chatBody: chat,
    sampling: samplingOf("chat", { ...chat, max_tokens: req.maxTokens }, engine.adapter),
    plan,
    chatResponse(response, o) {
      const refusedBy = response.status === 404 ? "404" : response.status === 403 && req.path === VLLM_GENERATE_PATH ? "403" : "";
      if (refusedBy) {
        input.onRouteRefused?.();
        return noTokenRoute(req.path, kind, refusedBy, images !== undefined, input.onRouteRefused !== undefined);
      }
      if (!response.ok || !response.body) return response;
      if (images) {
        // The engine's echo is the prompt recorded: no memo of the proxy's ids to read it against.
        const stream = (response.headers.get("content-type") ?? "").includes("text/event-stream");
        if (stream) return chatStreamResponse(context, response.body, o?.objects);
        return new Response(response.body.pipeThrough(wholeBody((text) => chatJsonAnswer(context, text))), { status: 200, headers: { "content-type": "application/json" } });
      }
      // The answer carries the prompt ids as promptText: the rollout's id memo (which the
      // pipeline reads the answer's prompt_token_ids against) is that text and the plan's ids,
      // so they are taken as they are instead of parsed again; no per-id offsets are kept
      // (a memo that does not match whole is parsed from the start).
      rollout.idsMemo = { text: promptText, ids: plan.prompt instanceof Uint32Array ? plan.prompt : Uint32Array.from(plan.prompt), ends: NO_ENDS };
      context.idsMemo = rollout.idsMemo;
      const stream = (response.headers.get("content-type") ?? "").includes("text/event-stream");
      if (stream) return chatStreamResponse(context, response.body, o?.objects);
      return new Response(response.body.pipeThrough(wholeBody((text) => chatJsonAnswer(context, text))), { status: 200, headers: { "content-type": "application/json" } });
    },
    fields: () => ({
      ...imageVerdict(),
      tokenMode: TokenMode.TOKEN_IN,
      chainId,
      chainParent: plan.parent,
      chainStart: plan.start,
      chainStartDetail: plan.detail,
      renderedTokens: plan.rendered,
      engineRequest: encoder.encode(JSON.stringify(req.recorded)),
      chainAnswer: answer ? encoder.encode(JSON.stringify({ content: answer.content, reasoning: answer.reasoning, tool_calls: answer.toolCalls })) : new Uint8Array(0),
    }),
    knownPrefix: (prompt) => (prompt !== undefined && prompt === plan.prompt ? planPrefix(plan) : undefined),
    recorded(call, state, recordedPrompt) {
      // The memo was this call's (chatResponse); the next call writes its own. Not kept between
      // calls: its text is the size of the prompt again (docs/performance.md, "Memory per rollout").
      state.idsMemo = {};
      if (!answer || call.status !== CallStatus.OK || call.tokenStatus !== TokenStatus.COMPLETE) return;
      // The chain holds the ids the rollout's prompt-delta history holds (one array): its tokens
      // are that array (made from the plan's own prompt, they begin with it), its prompt a view of
      // its start. With images the recorded ids are the engine's (expanded); the chain keeps its own.
      const tokens = images ? joinIds(plan.prompt, call.completionTokenIds) : (state.recent.find((p) => p.callId === call.callId)?.tokens ?? joinIds(plan.prompt, call.completionTokenIds));
      const prompt = tokens instanceof Uint32Array && ((!images && recordedPrompt === plan.prompt) || startsWithIds(tokens, plan.prompt)) ? tokens.subarray(0, plan.prompt.length) : plan.prompt;
      if (prompt !== plan.prompt) keepPromptText(tokens, plan.prompt.length, promptText, plan.chain?.tokens);
      const chains = (state.chains ??= newRolloutChains());
      chains.lost = false;
      useChain(chains, chainAfter(chainId, call.callId, { ...plan, prompt }, tokens, answer));
    },
  };
}

/** The ids the plan's prompt was made from: the chain's (its prompt, for a retry), then what the call appends. */
function planPrefix(plan: Plan): TokenIds | undefined {
  if (!plan.chain) return undefined;
  return plan.prompt === plan.chain.prompt ? plan.chain.prompt : plan.chain.tokens;
}

/** The request rendered as the model renders it, and its place in the rollout's chains (restored first after a restart). */
async function planForRollout(model: Model, state: RolloutState, chat: Record<string, any>) {
  let prepared;
  const previous = previousMessages(state.rollout.rolloutId);
  try {
    prepared = model.prepare(chat as never, previous, rawMessagesOf(chat));
  } catch (error) {
    throw refusal(error, model.spec);
  }
  heldMessages(state.rollout.rolloutId, previous);
  // A rollout open at a restart: its chains come back from its records at its first call (restore.ts).
  if (state.chains?.recorded) await (state.chains.restoring ??= restoreChains(model, state.chains, state.rollout.rolloutId));
  const chains = (state.chains ??= newRolloutChains());
  // Records that could not give them back, or the proxy's token budget dropping the rollout's history, lost its chains: the next call says so.
  const lost = chains.lost === true && chains.list.length === 0 ? (chains.lostWhy ?? RESTART_LOST) : undefined;
  let plan: Plan;
  try {
    plan = planCall(model, chains, prepared, lost);
  } catch (error) {
    throw refusal(error, model.spec);
  }
  return { prepared, plan };
}

/** The engine has no token-id route where its kind says (a 404; vLLM's 403 for scale-out routes it was not started with): an error that says what token-in mode needs. */
function noTokenRoute(path: string, kind: "vllm" | "sglang", status: string, withImages: boolean, found: boolean): Response {
  const message =
    path === VLLM_GENERATE_PATH && !withImages && found
      ? `token-in mode: the engine answered ${status} at ${path}, which it served when --token-in-route auto asked (it was restarted without --enable-scale-out?); the next call asks again and takes /v1/completions if the route is gone (docs/token-in.md)`
      : path === VLLM_GENERATE_PATH && !withImages
      ? `token-in mode: the engine answered ${status} at ${path}, where --token-in-route generate sends token-in calls; start vLLM (0.33.0) with --enable-scale-out, or use --token-in-route auto or completions (/v1/completions, every vLLM server; docs/token-in.md)`
      : path === VLLM_GENERATE_PATH
      ? `token-in mode: the engine answered ${status} at ${path}, the route vLLM takes token ids with images at (vLLM's /v1/completions takes no images); start vLLM (0.33.0) with --enable-scale-out, serve the model with SGLang (/generate with input_ids and image_data; 0.5.23), or use engine mode for image calls (tokenMode: engine; docs/token-in.md)`
      : `token-in mode: the engine answered 404 at ${path}, the route ${kind === "sglang" ? "SGLang" : "vLLM"} takes token-id prompts at; token-in mode needs vLLM (/v1/completions with a token-id prompt; OpenForge follows 0.33.0) or SGLang (/generate with input_ids; 0.5.23), named by --engine (or auto), or engine mode (tokenMode: engine; docs/token-in.md)`;
  return new Response(JSON.stringify({ error: { message, type: "upstream_error", code: "no_token_route" } }), { status: 502, headers: { "content-type": "application/json" } });
}

/** A request the engine would refuse, refused as it would (400, naming the field). */
function refusal(error: unknown, spec: ModelSpec): unknown {
  if (error instanceof ChatRequestError) {
    const message = /not a multimodal model/.test(error.message)
      ? `${error.message}: the model directory token-in mode renders with has no image processor (a vision model's directory holds its preprocessor_config.json); name the served vision model's directory, or use engine mode (tokenMode: engine)`
      : error.message;
    return new ProxyHttpError(400, message, "invalid_request_error", "invalid_request", error.param ?? null);
  }
  if (error instanceof ChatTemplateError) return new ProxyHttpError(400, `${spec.name}'s chat template: ${error.message}`, "invalid_request_error", "invalid_request");
  return error;
}

/** `reader`, telling `onPrompt` the prompt ids the engine echoes. */
function echoReader(reader: EngineAnswerReader, onPrompt: (ids: ArrayLike<number>) => void): EngineAnswerReader {
  return {
    usage: () => reader.usage(),
    read(event) {
      const step = reader.read(event);
      if (step?.promptIds) onPrompt(step.promptIds);
      return step;
    },
  };
}

/** Collects a whole body and emits `convert` of its text once it has ended. */
function wholeBody(convert: (text: string) => string): TransformStream<Uint8Array, Uint8Array> {
  const chunks: Uint8Array[] = [];
  return new TransformStream({
    transform(chunk) {
      chunks.push(chunk);
    },
    flush(controller) {
      let size = 0;
      for (const c of chunks) size += c.byteLength;
      const all = new Uint8Array(size);
      let at = 0;
      for (const c of chunks) {
        all.set(c, at);
        at += c.byteLength;
      }
      controller.enqueue(encoder.encode(convert(decoder.decode(all))));
    },
  });
}
