/**
 * SGLang 0.5.23's native `POST /generate` (the sglang flavour only; docs/engines.md), written
 * from its source: `sglang/srt/entrypoints/http_server.py` (`generate_request`,
 * `serve_generate_request`), the JSON contract `sglang/api/v1/api_types.py` (`GenerateRequest`:
 * unknown top-level keys ignored; `SamplingParams`: unknown keys a 400 `{"error": "unknown field
 * ..."}`) and the answer built in `sglang/srt/managers/tokenizer_manager.py`:
 *
 * - not streamed: `{text, output_ids, meta_info, prompt_token_ids?}`; `meta_info` holds `id`,
 *   `finish_reason` (`{"type": "stop", "matched": <id or string>}`, `{"type": "length",
 *   "length": N}`), `prompt_tokens`, `weight_version`, `num_retractions`, with `return_logprob`
 *   `input_token_logprobs` and `output_token_logprobs` (`[logprob, id, null]` rows) and
 *   `output_token_logprobs_length`, then `reasoning_tokens`, `completion_tokens`,
 *   `cached_tokens`, `e2e_latency`; `output_ids` end with the stop token; `reasoning_tokens`
 *   is the scheduler's count (`tokenizer_manager.py:2555`, flavours/sglang.ts
 *   `sglangReasoningTokens`), nonzero only when the body sets `require_reasoning: true`
 *   (`GenerateRequest.require_reasoning`, `api_types.py:264`; `GenerateReqInput` defaults it
 *   to false, `io_struct.py:317`) on a server with a reasoning parser;
 * - streamed (the default cumulative mode): one `data:` event per decode step with the text, the
 *   `output_ids` and the logprob rows *so far*, `finish_reason` null until the last, then
 *   `data: [DONE]`; started with `--incremental-streaming-output` (`incrementalStreamingOutput`),
 *   each event holds only its new text, ids and logprob rows (`meta_info` counts stay whole:
 *   `reasoning_tokens` is the count over the output so far).
 *   `return_prompt_token_ids` adds the prompt to every event.
 *
 * The prompt is token ids (`input_ids`) or text, with `image_data` (one image or a list: data:
 * URLs or base64) expanded as SGLang's Qwen-VL processor does (images.ts), the prompt it ran
 * echoed by `return_prompt_token_ids`; a rendered Qwen3 chat is continued exactly as
 * the chat endpoint samples that turn (completions.ts). Batches (a list of prompts) and `n > 1`
 * are not simulated and are refused naming that.
 */
import { coveredBytes, generate, visibleText } from "./generate.ts";
import { hashIds, hashString, mix } from "./hash.ts";
import { sampledLogprobs } from "./logprobs.ts";
import type { SimContext } from "./context.ts";
import { decideTurn } from "./policy.ts";
import { pacedChunks, sseResponse } from "./sse.ts";
import { IM_END, loadTokenizer } from "./model.ts";
import { chatmlTurns, chatPrompt } from "./completions.ts";
import { whileGenerating } from "./flavours/pause.ts";
import { sglangReasoningTokens } from "./flavours/sglang.ts";
import { atCharBoundary } from "./generate.ts";
import { expandPrompt } from "./images.ts";

/** SamplingParams' fields (api_types.py `_FIELDS_SamplingParams`), in its order: any other key is a 400. */
const SAMPLING_FIELDS = [
  "max_new_tokens",
  "stop",
  "stop_token_ids",
  "stop_regex",
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "frequency_penalty",
  "presence_penalty",
  "repetition_penalty",
  "min_new_tokens",
  "n",
  "json_schema",
  "regex",
  "ebnf",
  "structural_tag",
  "ignore_eos",
  "skip_special_tokens",
  "spaces_between_special_tokens",
  "no_stop_trim",
  "stream_interval",
  "logit_bias",
  "sampling_seed",
  "custom_params",
  "beam_width",
  "watermark",
  "choice",
] as const;
const INT_FIELDS = new Set(["max_new_tokens", "top_k", "min_new_tokens", "n", "stream_interval", "sampling_seed", "beam_width"]);
const FLOAT_FIELDS = new Set(["temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty"]);
const BOOL_FIELDS = new Set(["ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "no_stop_trim"]);

/** serde's `Unexpected` display (api_types.py `_unexpected`). */
function unexpected(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "boolean") return `boolean \`${v}\``;
  if (typeof v === "number") return Number.isInteger(v) ? `integer \`${v}\`` : `floating point \`${v}\``;
  if (typeof v === "string") return `string "${v}"`;
  if (Array.isArray(v)) return "sequence";
  return "map";
}

const contractError = (message: string) => Response.json({ error: message }, { status: 400, headers: { "x-forge-simulator": "1" } });

/** The contract violation in a /generate body, or undefined (the checks this stand-in needs; api_types.py). */
function contractProblem(body: unknown): string | undefined {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return `invalid type: ${unexpected(body)}, expected struct GenerateRequest`;
  const b = body as Record<string, unknown>;
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== "boolean") return `invalid type: ${unexpected(b.stream)}, expected a boolean`;
  if (b.return_prompt_token_ids !== undefined && typeof b.return_prompt_token_ids !== "boolean") return `invalid type: ${unexpected(b.return_prompt_token_ids)}, expected a boolean`;
  if (b.require_reasoning !== undefined && b.require_reasoning !== null && typeof b.require_reasoning !== "boolean") return `invalid type: ${unexpected(b.require_reasoning)}, expected a boolean`;
  const sp = b.sampling_params;
  if (sp === undefined || sp === null) return undefined;
  if (Array.isArray(sp)) return undefined;
  if (typeof sp !== "object") return `invalid type: ${unexpected(sp)}, expected a value or an array of values for SamplingParamsOrList`;
  for (const [key, x] of Object.entries(sp as Record<string, unknown>)) {
    if (!(SAMPLING_FIELDS as readonly string[]).includes(key)) return `unknown field \`${key}\`, expected one of ${SAMPLING_FIELDS.map((f) => `\`${f}\``).join(", ")}`;
    if (x === null) continue;
    if (INT_FIELDS.has(key) && !(typeof x === "number" && Number.isInteger(x))) return `invalid type: ${unexpected(x)}, expected i64`;
    if (FLOAT_FIELDS.has(key) && typeof x !== "number") return `invalid type: ${unexpected(x)}, expected f64`;
    if (BOOL_FIELDS.has(key) && typeof x !== "boolean") return `invalid type: ${unexpected(x)}, expected a boolean`;
  }
  return undefined;
}

/**
 * `POST /generate`.
 *
 * @example
 * await handleNativeGenerate(ctx, new Request("http://sim/generate", { method: "POST", body: JSON.stringify({ input_ids: [151644, 872, 198], sampling_params: { max_new_tokens: 8 } }) }));
 */
export async function handleNativeGenerate(ctx: SimContext, request: Request): Promise<Response> {
  let body: any;
  try {
    body = JSON.parse(await request.text());
  } catch (error) {
    // FastAPI's RequestValidationError, answered in SGLang's flat shape (http_server.py:635-695).
    return ctx.flavour.error(400, `[{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'ctx': {'error': '${(error as Error).message}'}}]`);
  }
  const problem = contractProblem(body);
  if (problem) return contractError(problem);
  const refused = await whileGenerating(ctx, request.signal);
  if (refused) return refused;
  const tokenizer = await loadTokenizer();
  const sp = (body.sampling_params ?? {}) as Record<string, any>;
  if (Array.isArray(body.sampling_params) || (Array.isArray(body.input_ids) && Array.isArray(body.input_ids[0])) || Array.isArray(body.text) || (sp.n ?? 1) !== 1) {
    return ctx.flavour.error(400, "policy simulator: batched /generate (a list of prompts or sampling params, n > 1) is not simulated; send one prompt per request");
  }
  let promptIds: number[];
  if (Array.isArray(body.input_ids)) {
    if (!body.input_ids.every((id: unknown) => Number.isInteger(id) && (id as number) >= 0)) return contractError(`invalid type: ${unexpected(body.input_ids.find((id: unknown) => !Number.isInteger(id)))}, expected u32`);
    promptIds = body.input_ids;
  } else if (typeof body.text === "string") promptIds = tokenizer.encode(body.text);
  else return ctx.flavour.error(400, "Either text, input_ids or input_embeds should be provided.");
  if (promptIds.length === 0) return ctx.flavour.error(400, "The input_ids is empty.");
  // The policy reads the conversation as rendered (one placeholder per image); the engine runs the expanded prompt.
  const promptText = tokenizer.decode(promptIds);
  const images = body.image_data === undefined || body.image_data === null ? [] : Array.isArray(body.image_data) ? body.image_data : [body.image_data];
  if (images.length > 0) {
    if (!images.every((i: unknown) => typeof i === "string")) return ctx.flavour.error(400, "policy simulator: image_data entries must be strings (data: URLs or base64)");
    const expanded = expandPrompt("sglang", tokenizer, promptIds, images, ctx.imageProcessor);
    if ("error" in expanded) return ctx.flavour.error(400, expanded.error);
    if (expanded.drift) ctx.log(`policy simulator: WARNING: ${expanded.drift}`);
    promptIds = expanded.ids;
  }

  const rollout = request.headers.get("x-forge-rollout") ?? undefined;
  const context = mix(ctx.seed, sp.sampling_seed ?? 0, hashIds(promptIds), rollout ? hashString(rollout) : 0);
  const chat = chatPrompt(promptText, ctx);
  const decision = decideTurn({ messages: chat?.turns ?? chatmlTurns(promptText), tools: chat?.tools ?? [], script: ctx.script, seed: ctx.seed, conversationKey: rollout, choiceIndex: 0, enableThinking: chat?.thinking });
  const turn = chat ? decision.turn : { content: decision.turn.content, toolCalls: [] };
  const stop = sp.stop == null ? [] : typeof sp.stop === "string" ? [sp.stop] : (sp.stop as string[]);
  // SamplingParams' default max_new_tokens is 128 (api_types.py).
  const g = generate(tokenizer, turn, { thinking: chat?.thinking ?? false, format: ctx.toolFormat, maxTokens: sp.max_new_tokens ?? 128, stop });
  const logprobs = sampledLogprobs(g.ids, context, 0);
  ctx.record({ prompt_token_ids: promptIds, token_ids: g.ids, logprobs: logprobs.map((l) => l.logprob), text: tokenizer.decode(g.ids), ...(rollout ? { rollout } : {}) });
  ctx.log(`policy simulator: /generate ${promptIds.length}+${g.ids.length} tokens, ${decision.task ? `task ${decision.task}` : "default policy"}, finish ${g.finishReason}`);

  const rid = typeof body.rid === "string" ? body.rid : crypto.randomUUID().replaceAll("-", "");
  const started = performance.now();
  const returnLogprob = body.return_logprob === true;
  const requireReasoning = ctx.thinks && body.require_reasoning === true;
  const finishReason = g.finishReason === "length" ? { type: "length", length: g.ids.length } : { type: "stop", matched: g.stopReason ?? (g.ids.at(-1) === IM_END ? IM_END : null) };
  /**
   * The answer after `n` tokens: everything so far (the default streaming mode), or with
   * `from` (--incremental-streaming-output) only the ids and logprob rows from `from` on, the
   * text given being what is new (`_slice_streaming_output_meta_info`; the counts stay whole).
   */
  const answer = (n: number, text: string, finished: boolean, from = 0) => ({
    text,
    output_ids: g.ids.slice(from, n),
    meta_info: {
      id: rid,
      finish_reason: finished ? finishReason : null,
      prompt_tokens: promptIds.length,
      weight_version: ctx.engine.weightVersion,
      num_retractions: 0,
      ...(returnLogprob
        ? { input_token_logprobs: [], output_token_logprobs: logprobs.slice(from, n).map((l) => [l.logprob, l.id, null]), output_token_logprobs_length: n }
        : {}),
      reasoning_tokens: sglangReasoningTokens(g.ids.slice(0, n), requireReasoning),
      completion_tokens: n,
      cached_tokens: 0,
      e2e_latency: (performance.now() - started) / 1000,
    },
    ...(body.return_prompt_token_ids === true ? { prompt_token_ids: promptIds } : {}),
  });
  const whole = visibleText(g, 0, coveredBytes(g));
  if (body.stream !== true) return Response.json(answer(g.ids.length, whole, true), { headers: { "x-forge-simulator": "1" } });
  return sseResponse(async function* () {
    let sent = 0;
    for await (const [from, n] of pacedChunks(g.ids.length, ctx, request.signal)) {
      // The text so far stops before a character the tokens have only begun.
      let end = n === g.ids.length ? coveredBytes(g) : Math.min(g.byteEnds[n - 1]!, coveredBytes(g));
      while (end > 0 && !atCharBoundary(g, end)) end--;
      if (!ctx.incrementalStreaming) yield answer(n, visibleText(g, 0, end), n === g.ids.length);
      else {
        yield answer(n, visibleText(g, sent, end), n === g.ids.length, from);
        sent = Math.max(sent, end);
      }
    }
  }, request.signal);
}
