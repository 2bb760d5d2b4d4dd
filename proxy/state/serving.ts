/**
 * A rollout's own serving, set at registration (`upstreams`, `policy_version`, `sampling` in
 * the register body): the inference servers of a trainer that runs the rollout (veRL's
 * replicas), the version of the weights they hold, and the sampling its rollout config uses.
 * It is kept in the Rollout record's labels, so the log says how the rollout was served and a
 * restarted proxy serves it the same way.
 */
import type { Rollout } from "../../schemas/index.ts";
import { normalizeUpstream, type UpstreamState } from "../upstream/router.ts";

/** Labels of the Rollout record that hold its serving. */
export const SERVING_LABELS = { upstreams: "forge.upstreams", sampling: "forge.sampling" } as const;

export type RolloutSampling = { temperature?: number; top_p?: number; top_k?: number };

export interface RolloutServing {
  /** The rollout's upstreams, in the order its calls try them (a per-rollout rotation: sticky, spread). */
  upstreams: UpstreamState[];
  /** Set on every call's body, over what the harness sent. */
  sampling: RolloutSampling | undefined;
}

/**
 * The labels that record a registration's serving.
 *
 * @example
 * servingLabels(["http://10.0.0.5:41877/v1"], { temperature: 1 }) // { "forge.upstreams": "[…]", "forge.sampling": "{…}" }
 */
export function servingLabels(upstreams: string[] | undefined, sampling: RolloutSampling | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  if (upstreams?.length) labels[SERVING_LABELS.upstreams] = JSON.stringify(upstreams.map(normalizeUpstream));
  if (sampling && Object.keys(sampling).length > 0) labels[SERVING_LABELS.sampling] = JSON.stringify(sampling);
  return labels;
}

/**
 * A rollout's own serving from its record's labels, or undefined when the proxy's upstreams serve it.
 *
 * @example
 * servingOf(rollout)?.upstreams[0]!.url // "http://10.0.0.5:41877"
 */
export function servingOf(rollout: Rollout): RolloutServing | undefined {
  const urls = parse<string[]>(rollout.labels[SERVING_LABELS.upstreams]);
  const sampling = parse<RolloutSampling>(rollout.labels[SERVING_LABELS.sampling]);
  if (!Array.isArray(urls) || urls.length === 0) return sampling ? { upstreams: [], sampling } : undefined;
  const start = rotation(rollout.rolloutId, urls.length);
  const ordered = [...urls.slice(start), ...urls.slice(0, start)];
  return { upstreams: ordered.map((url) => ({ url: normalizeUpstream(url), healthy: true, lastError: "", lastCheckUnixMs: 0 })), sampling };
}

/**
 * `body` with the rollout's sampling set (a copy), or `body` itself when it has none.
 *
 * @example
 * withSampling({ model: "m", temperature: 0.2 }, { temperature: 1 }) // { model: "m", temperature: 1 }
 */
export function withSampling<T extends Record<string, unknown>>(body: T, sampling: RolloutSampling | undefined): T {
  if (!sampling) return body;
  const out: Record<string, unknown> = { ...body };
  for (const [key, value] of Object.entries(sampling)) if (value !== undefined) out[key] = value;
  return out as T;
}

function parse<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

function rotation(id: string, n: number): number {
  let h = 0;
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
  return h % n;
}
