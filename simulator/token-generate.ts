/**
 * vLLM 0.33.0's `POST /inference/v1/generate` (the vllm flavour, served when vLLM runs with
 * `--enable-scale-out`; 403 otherwise), written from `entrypoints/scale_out/token_in_token_out/`
 * (`protocol.py` `GenerateRequest` / `GenerateTokensResponse`, `serving.py`, `api_router.py`,
 * `scale_out/factories.py`):
 *
 * - the request: `token_ids` (at least one, none negative), `sampling_params` (vLLM's
 *   SamplingParams; `max_tokens` left out is what the context leaves), `content_parts`
 *   (`{type: "image_url", url}`: images resolved as a chat request's, each `<|image_pad|>` of
 *   the ids expanded to the image's tokens: images.ts) or `features` (not simulated), never both;
 *   `return_token_ids`, `stream`, `stream_options.include_usage`; unknown keys ignored;
 *   `sampling_params.detokenize` false (nothing decoded) refused with stop strings, as vLLM's
 *   SamplingParams refuses it;
 * - the answer, `output_mode` "tokens": `choices[0]` with `token_ids`, `finish_reason`,
 *   `stop_reason`, `weight_versions` (the finished output's spans), `logprobs.content` rows
 *   `{token_id, logprob, rank, top_logprobs}` when
 *   `sampling_params.logprobs` is set; the prompt it ran as `prompt_token_ids` with
 *   `mm_placeholders` (`{image: [{offset, length}]}`) on `return_token_ids`; `usage`;
 * - streamed: one `data:` chunk per step with the new `token_ids` (the first with
 *   `prompt_token_ids` and `mm_placeholders`), a usage chunk (`choices: []`) with
 *   `include_usage`, then `data: [DONE]`.
 */
import { generate } from "./generate.ts";
import { hashIds, hashString, mix } from "./hash.ts";
import { sampledLogprobs, vllmCandidates } from "./logprobs.ts";
import type { SimContext } from "./context.ts";
import { decideTurn } from "./policy.ts";
import { pacedChunks, sseResponse } from "./sse.ts";
import { loadTokenizer } from "./model.ts";
import { chatmlTurns, chatPrompt } from "./completions.ts";
import { whileGenerating } from "./flavours/pause.ts";
import { vllmError, weightVersionSpans } from "./flavours/vllm.ts";
import { expandPrompt, IMAGE_PAD } from "./images.ts";

const MAX_MODEL_LEN = 131072;
const SIM = { "x-forge-simulator": "1" };

/** pydantic's message for one invalid field, as vLLM's handler wraps it (a 400). */
const invalid = (message: string) => vllmError(400, message);

/**
 * `POST /inference/v1/generate`.
 *
 * @example
 * await handleTokenGenerate(ctx, new Request("http://sim/inference/v1/generate", { method: "POST", body: JSON.stringify({ token_ids: [151644, 872, 198], sampling_params: { max_tokens: 8 } }) }));
 */
export async function handleTokenGenerate(ctx: SimContext, request: Request): Promise<Response> {
  if (!ctx.scaleOut) {
    return Response.json({ error: { message: "Scale-out endpoints are disabled. Restart vllm serve with --enable-scale-out to enable them.", type: "PermissionDeniedError", param: null, code: 403 } }, { status: 403, headers: SIM });
  }
  const body = await readGenerateBody(request);
  if (body instanceof Response) return body;
  const ids: number[] = body.token_ids;
  const sp = body.sampling_params;
  const refused = await whileGenerating(ctx, request.signal);
  if (refused) return refused;

  const tokenizer = await loadTokenizer();
  const parts: any[] = Array.isArray(body.content_parts) ? body.content_parts : [];
  const images = parts.filter((p) => p?.type === "image_url").map((p) => p.url);
  if (!images.every((u) => typeof u === "string")) return invalid("content_parts: each image_url part needs its url");
  // The policy reads the conversation as rendered (one placeholder per image); the engine runs the expanded prompt.
  const promptText = tokenizer.decode(ids);
  let prompt: number[] = ids;
  let counts: number[] = [];
  if (images.length > 0) {
    const expanded = expandPrompt("vllm", tokenizer, ids, images, ctx.imageProcessor);
    if ("error" in expanded) return vllmError(400, expanded.error);
    prompt = expanded.ids;
    counts = expanded.counts;
  }
  if (prompt.length >= MAX_MODEL_LEN) return vllmError(400, `This model's maximum context length is ${MAX_MODEL_LEN} tokens. However, your request has ${prompt.length} input tokens.`);

  const rollout = request.headers.get("x-forge-rollout") ?? undefined;
  const context = mix(ctx.seed, sp.seed ?? 0, hashIds(prompt), rollout ? hashString(rollout) : 0);
  const chat = chatPrompt(promptText, ctx);
  const decision = decideTurn({ messages: chat?.turns ?? chatmlTurns(promptText), tools: chat?.tools ?? [], script: ctx.script, seed: ctx.seed, conversationKey: rollout, choiceIndex: 0, enableThinking: chat?.thinking });
  const turn = chat ? decision.turn : { content: decision.turn.content, toolCalls: [] };
  const stop = sp.stop == null ? [] : typeof sp.stop === "string" ? [sp.stop] : (sp.stop as string[]);
  const g = generate(tokenizer, turn, { thinking: chat?.thinking ?? false, format: ctx.toolFormat, maxTokens: sp.max_tokens ?? MAX_MODEL_LEN - prompt.length, stop });
  const top = typeof sp.logprobs === "number" ? sp.logprobs : undefined;
  // The sampled token first, then the `logprobs` most likely but it (vLLM's candidates: `logprobs` entries when the sampled token is one of them, one more when not).
  const logprobs = sampledLogprobs(g.ids, context, top === undefined ? 0 : top + 1);
  ctx.record({ prompt_token_ids: prompt, token_ids: g.ids, logprobs: logprobs.map((l) => l.logprob), text: tokenizer.decode(g.ids), ...(rollout ? { rollout } : {}) });
  ctx.log(`policy simulator: /inference/v1/generate ${prompt.length}+${g.ids.length} tokens (${images.length} images), ${decision.task ? `task ${decision.task}` : "default policy"}, finish ${g.finishReason}`);

  const requestId = typeof body.request_id === "string" ? body.request_id : crypto.randomUUID();
  const echo = body.return_token_ids === true;
  const placeholders = echo ? { image: placeholderRanges(prompt, counts) } : null;
  const finishReason = g.finishReason;
  const stopReason = g.finishReason === "length" ? null : g.stopReason;
  const rows = (from: number, to: number) =>
    top === undefined ? null : { content: logprobs.slice(from, to).map((l) => ({ token_id: l.id, logprob: l.logprob, rank: 1, top_logprobs: vllmCandidates(l, top).map((t, i) => ({ token_id: t.id, logprob: t.logprob, rank: i + 1 })) })) };
  const usage = { prompt_tokens: prompt.length, total_tokens: prompt.length + g.ids.length, completion_tokens: g.ids.length, prompt_tokens_details: null };
  // The finished output's spans, asked or not: vLLM's engine core labels every output with its
  // weight version ("default" until set, core.py `_attach_weight_version`), the output processor
  // reports them when the request finishes (`_weight_version_spans`).
  const versions = weightVersionSpans(ctx, g.ids.length);
  if (body.stream !== true) {
    return Response.json(
      {
        request_id: requestId,
        model: ctx.model,
        created: Math.floor(Date.now() / 1000),
        usage,
        prompt_logprobs: null,
        prompt_token_id_logprobs: null,
        prompt_token_ids: echo ? prompt : null,
        mm_placeholders: images.length > 0 ? placeholders : null,
        metrics: null,
        kv_transfer_params: null,
        ec_transfer_params: null,
        output_mode: "tokens",
        choices: [{ index: 0, finish_reason: finishReason, stop_reason: stopReason, token_ids: g.ids, routed_experts: null, sampling_mask: null, weight_versions: versions, logprobs: rows(0, g.ids.length) }],
      },
      { headers: SIM },
    );
  }
  const includeUsage = body.stream_options?.include_usage === true;
  return sseResponse(async function* () {
    for await (const [from, n] of pacedChunks(g.ids.length, ctx, request.signal)) {
      const last = n === g.ids.length;
      yield {
        request_id: requestId,
        usage: null,
        ...(from === 0 && echo ? { prompt_token_ids: prompt, ...(images.length > 0 ? { mm_placeholders: placeholders } : {}) } : {}),
        output_mode: "tokens",
        choices: [{ index: 0, finish_reason: last ? finishReason : null, stop_reason: last ? stopReason : null, token_ids: g.ids.slice(from, n), routed_experts: null, sampling_mask: null, weight_versions: last ? versions : null, logprobs: rows(from, n) }],
      };
    }
    if (includeUsage) yield { request_id: requestId, usage, output_mode: "tokens", choices: [] };
  }, request.signal);
}

/** The request body, checked as vLLM's GenerateRequest validates it; or the 400 answer it gets. */
async function readGenerateBody(request: Request): Promise<any> {
  let body: any;
  try {
    body = JSON.parse(await request.text());
  } catch (error) {
    return invalid(`JSON decode error: ${(error as Error).message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) return invalid("Input should be a valid dictionary or object to extract fields from");
  const ids = body.token_ids;
  if (!Array.isArray(ids) || ids.length === 0) return invalid("token_ids: List should have at least 1 item after validation");
  if (!ids.every((id: unknown) => Number.isInteger(id))) return invalid("token_ids: Input should be a valid integer");
  if (ids.some((id: number) => id < 0)) return invalid("Value error, token_ids must not contain negative values");
  const sp = body.sampling_params;
  if (sp === undefined) return invalid("sampling_params: Field required");
  if (sp === null || typeof sp !== "object" || Array.isArray(sp)) return invalid("sampling_params: Input should be an object");
  if (body.content_parts && body.features) return invalid("Value error, content_parts and features are mutually exclusive");
  if (body.features) return vllmError(400, "policy simulator: pre-processed multimodal features are not simulated; send content_parts");
  if ((sp.n ?? 1) !== 1) return vllmError(400, "policy simulator: n > 1 is not simulated");
  // SamplingParams._verify_args: stop strings are matched on the decoded text.
  const stops = typeof sp.stop === "string" ? [sp.stop] : Array.isArray(sp.stop) ? sp.stop : [];
  if (sp.detokenize === false && stops.length > 0) return invalid("stop strings are only supported when detokenize is True. Set detokenize=True to use stop.");
  return body;
}

/** Where each image's tokens lie in the expanded prompt (vLLM's `mm_placeholders`). */
function placeholderRanges(prompt: readonly number[], counts: readonly number[]): { offset: number; length: number }[] {
  const out: { offset: number; length: number }[] = [];
  let i = 0;
  for (const length of counts) {
    while (i < prompt.length && prompt[i] !== IMAGE_PAD) i++;
    out.push({ offset: i, length });
    i += length;
  }
  return out;
}
