/**
 * Token-in mode (docs/token-in.md): the proxy keeps each conversation's token ids canonical.
 * It renders prompts itself with the model's tokenizer and chat template (model/), continues a
 * chain's ids with the rendered new messages instead of letting the engine re-render history,
 * sends the engine token ids (vLLM `/v1/completions`, SGLang `/generate`) and parses the
 * completion back with the model's parsers into the Chat answer the front doors speak.
 *
 * The pipeline (doors/pipeline.ts) asks `prepare` for each train-mode Chat call; everything
 * else (capture, stripping, translation to Messages / Responses, recording) is the pipeline's.
 */
import { loadModel, type Model, type ModelSpec } from "../../model/index.ts";
import type { UpstreamClient } from "../upstream/client.ts";
import type { EngineState } from "../engines/check.ts";
import type { RolloutState } from "../state/rollouts.ts";
import { ProxyHttpError } from "../errors.ts";
import { prepareTokenInCall, type TokenInCall } from "./call.ts";
import { DEFAULT_MAX_HELD_TOKENS, heldTokens, type HeldTokens } from "./held.ts";
import type { TokenInRoute } from "./engine-request.ts";
import { probeGenerateRoute, type RouteFinding } from "./route-probe.ts";

export interface TokenInOptions {
  /** The served model's tokenizer, chat template and parsers (as the engine is started with them). */
  model: ModelSpec;
  /** The engine's context length; default: `max_model_len` from the upstream's /v1/models. */
  maxModelLen?: number;
  /**
   * The shard's ceiling on the token ids its open rollouts' chains hold (held.ts): past it a new
   * rollout's first call is refused with a 503 until open ones finish. Default DEFAULT_MAX_HELD_TOKENS.
   */
  maxHeldTokens?: number;
  /**
   * Where a vLLM engine gets the calls (engine-request.ts): "auto" (default: "generate" where the
   * upstreams serve it, asked once per set of upstreams: route-probe.ts), "completions", or
   * "generate" (vLLM started with --enable-scale-out).
   */
  route?: TokenInRoute | "auto";
  /** Where `auto` says which route it found (once per set of upstreams). Default console.error. */
  log?: (line: string) => void;
}

export interface TokenIn {
  spec: ModelSpec;
  /** The loaded model (the tokenizer and template load at start, 1-3 s). */
  model: Promise<Model>;
  /** Plans a train-mode Chat call of `rollout`. */
  prepare(input: { rollout: RolloutState; chat: Record<string, any>; callId: string; engine: EngineState; client: UpstreamClient; signal?: AbortSignal }): Promise<TokenInCall>;
  /** The ids the shard's open rollouts' chains hold, against its ceiling. */
  held: HeldTokens;
}

/**
 * Token-in mode for a proxy.
 *
 * @example
 * const tokenIn = createTokenIn({ model: { ...QWEN3, dir: "/models/qwen3-8b" } });
 * await tokenIn.model; // loaded before the proxy serves
 */
export function createTokenIn(options: TokenInOptions): TokenIn {
  const model = loadModel(options.model);
  // max_model_len per set of upstreams (a rollout's own servers may differ from the proxy's).
  const contextLengths = new Map<string, Promise<number>>();
  const maxModelLen = (rollout: RolloutState, client: UpstreamClient, signal?: AbortSignal): Promise<number> => {
    if (options.maxModelLen) return Promise.resolve(options.maxModelLen);
    const key = rollout.serving?.upstreams.map((u) => u.url).join(",") || "";
    let known = contextLengths.get(key);
    if (!known) {
      known = askMaxModelLen(rollout, client, signal);
      contextLengths.set(key, known);
      known.catch(() => contextLengths.delete(key));
    }
    return known;
  };
  const routes = autoRoutes(options.log ?? ((line) => console.error(line)));
  const held = heldTokens(options.maxHeldTokens ?? DEFAULT_MAX_HELD_TOKENS);
  return {
    spec: options.model,
    model,
    held,
    async prepare(input) {
      const why = unfitEngine(input.engine);
      if (why) throw new ProxyHttpError(503, why, "service_unavailable", "engine_without_token_in");
      held.admit(input.rollout);
      const auto = (options.route ?? "auto") === "auto" && input.engine.info.kind === "vllm";
      const [m, contextLength, route] = await Promise.all([
        model,
        maxModelLen(input.rollout, input.client, input.signal),
        auto ? routes.routeFor(input.rollout, input.client, input.signal) : options.route === "auto" ? undefined : options.route,
      ]);
      // A found route the engine stopped serving (restarted without the flag) is asked about again on the next call.
      const onRouteRefused = auto && route === "generate" ? () => routes.forget(input.rollout) : undefined;
      const call = await prepareTokenInCall(m, { rollout: input.rollout, chat: input.chat, callId: input.callId, engine: input.engine, maxModelLen: contextLength, route, onRouteRefused });
      const recorded = call.recorded;
      call.recorded = (record, state, prompt) => {
        recorded(record, state, prompt);
        held.note(state);
      };
      return call;
    },
  };
}

/**
 * Why the engine cannot take token-id prompts ("" when it can): only vLLM (`/v1/completions`
 * with a token-id prompt) and SGLang (`/generate` with `input_ids`) do; an upstream that said it
 * is neither (an OpenAI-compatible server, a vendor API) gets engine mode.
 *
 * @example
 * unfitEngine(engineState) // "" for vLLM or SGLang, or while the upstream has not answered yet
 */
export function unfitEngine(engine: EngineState): string {
  if (!engine.identified || engine.info.kind !== "other") return "";
  return `token-in mode sends the engine token-id prompts, which only vLLM (/v1/completions) and SGLang (/generate) take; the upstream is neither (${engine.info.how}): pass --engine vllm|sglang if it is one, or run it in engine mode (tokenMode: engine; docs/token-in.md)`;
}

/** `--token-in-route auto`: the route each set of upstreams was found to serve, asked on its first call. */
function autoRoutes(log: (line: string) => void) {
  const found = new Map<string, Promise<RouteFinding | undefined>>();
  const keyOf = (rollout: RolloutState) => rollout.serving?.upstreams.map((u) => u.url).join(",") || "";
  return {
    async routeFor(rollout: RolloutState, client: UpstreamClient, signal?: AbortSignal): Promise<TokenInRoute> {
      const key = keyOf(rollout);
      let finding = found.get(key);
      if (!finding) {
        finding = probeGenerateRoute(rollout, client, signal).catch(() => undefined);
        found.set(key, finding);
        void finding.then((f) => (f ? log(`forge proxy: token-in (--token-in-route auto): ${f.why}`) : found.delete(key)));
      }
      // Not asked (the upstream did not answer): /v1/completions, which every vLLM serves; asked again next call.
      return (await finding)?.route ?? "completions";
    },
    forget(rollout: RolloutState): void {
      found.delete(keyOf(rollout));
    },
  };
}

/** `max_model_len` of the rollout's upstream (vLLM's and SGLang's /v1/models say it). */
async function askMaxModelLen(state: RolloutState, client: UpstreamClient, signal?: AbortSignal): Promise<number> {
  const sent = await client.send({ rolloutId: state.rollout.rolloutId, path: "/v1/models", method: "GET", signal, own: state.serving?.upstreams });
  const fix = "start the proxy with --max-model-len N (the engine's context length)";
  if ("error" in sent) throw new ProxyHttpError(sent.error.status, `token-in mode needs the engine's context length and could not ask for it: ${sent.error.message}; ${fix}`, sent.error.type, sent.error.code);
  const text = await sent.response.text();
  let len: unknown;
  try {
    len = (JSON.parse(text) as { data?: { max_model_len?: unknown }[] }).data?.[0]?.max_model_len;
  } catch {
    len = undefined;
  }
  if (!sent.response.ok || typeof len !== "number" || !Number.isInteger(len) || len <= 0) {
    throw new ProxyHttpError(502, `token-in mode needs the engine's context length: ${sent.upstream.url}/v1/models ${sent.response.ok ? "names no max_model_len" : `answered HTTP ${sent.response.status}`}; ${fix}`, "upstream_error", "no_context_length");
  }
  return len;
}

export type { TokenInCall, TokenInRecord } from "./call.ts";
export { DEFAULT_MAX_HELD_TOKENS, type HeldTokens } from "./held.ts";
