/**
 * `--token-in-route auto` (the default): whether a vLLM upstream serves `/inference/v1/generate`,
 * the lighter route for token ids (engine-request.ts `TokenInRoute`), asked once per set of
 * upstreams. vLLM 0.33.0 registers the route with `--enable-scale-out` (or `--tokens-only`,
 * which serves nothing else); without it every scale-out path answers 403
 * (`scale_out/factories.py`, `disabled_scale_out`), and a server without the route answers 404.
 * The probe's body is `{}`: a served route refuses it with a 400 (`token_ids` and
 * `sampling_params` are required; vLLM's validation handler answers 400) before anything reaches
 * the engine, so the probe generates nothing.
 */
import type { RolloutState } from "../state/rollouts.ts";
import type { UpstreamClient } from "../upstream/client.ts";
import { VLLM_GENERATE_PATH, type TokenInRoute } from "./engine-request.ts";

/** The route a vLLM upstream set gets token-in calls on, and why (logged once). */
export interface RouteFinding {
  route: TokenInRoute;
  why: string;
}

const EMPTY_OBJECT = new TextEncoder().encode("{}");

/**
 * Asks one of the rollout's upstreams whether it serves the generate route. Undefined when it
 * could not be asked (unreachable, timed out, aborted): the caller keeps /v1/completions for the
 * call and asks again on the next one.
 *
 * @example
 * (await probeGenerateRoute(rollout, client))?.route // "generate" on vLLM with --enable-scale-out
 */
export async function probeGenerateRoute(state: RolloutState, client: UpstreamClient, signal?: AbortSignal): Promise<RouteFinding | undefined> {
  const sent = await client.send({ rolloutId: state.rollout.rolloutId, path: VLLM_GENERATE_PATH, method: "POST", body: EMPTY_OBJECT, signal, own: state.serving?.upstreams });
  if ("error" in sent) return undefined;
  const status = sent.response.status;
  const text = await sent.response.text().catch(() => "");
  const at = `${sent.upstream.url}${VLLM_GENERATE_PATH}`;
  if (status === 400 && text.includes("token_ids")) {
    return { route: "generate", why: `${at} is served (vLLM with --enable-scale-out; it refused the probe's empty body naming token_ids): token-in calls go there` };
  }
  const answered = status === 403 ? "403 (vLLM started without --enable-scale-out)" : status === 404 ? "404 (no such route)" : `HTTP ${status}`;
  return { route: "completions", why: `${at} answered ${answered}: token-in calls go to /v1/completions` };
}
