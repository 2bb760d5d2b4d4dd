/**
 * `forge proxy --eval`: the one rollout an evaluation records into, registered through the
 * proxy's own control API (the same `POST /control/rollouts` an orchestrator calls), and the
 * lines that tell the user where to point a harness and how to read what was recorded.
 */
import { join } from "node:path";
import { UsageError } from "../lib/index.ts";

/** The registration answer of `POST /control/rollouts` (docs/proxy.md). */
export type EvalRollout = {
  rollout_id: string;
  api_key: string;
  openai_base_url: string;
  anthropic_base_url: string;
  policy_version: number;
};

/**
 * Registers rollout `rolloutId` (experiment `eval`, task `eval`) on the proxy at `proxyUrl`.
 * A taken or malformed id is a usage error naming `--rollout`.
 *
 * @example
 * const rollout = await registerEvalRollout("http://127.0.0.1:8787", adminToken, "eval-20250101-120000");
 * rollout.openai_base_url; // "http://127.0.0.1:8787/r/eval-20250101-120000/v1"
 */
export async function registerEvalRollout(proxyUrl: string, adminToken: string, rolloutId: string): Promise<EvalRollout> {
  const response = await fetch(`${proxyUrl}/control/rollouts`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ rollout_id: rolloutId, experiment: "eval", task_id: "eval" }),
  });
  const body = (await response.json()) as EvalRollout & { error?: { message?: string } };
  if (response.status === 409) {
    throw new UsageError(`forge proxy: --rollout ${rolloutId}: a rollout of that id is already recorded in this data directory (its key is not kept); pick another id or another --data`);
  }
  if (response.status === 400) throw new UsageError(`forge proxy: --rollout ${rolloutId}: ${body.error?.message ?? "refused"}`);
  if (response.status !== 201) throw new Error(`registering the eval rollout failed: HTTP ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * What to point a harness at, and how to read the calls back (printed by `forge proxy --eval`).
 *
 * @example
 * console.log(evalInstructions(rollout, "http://127.0.0.1:8787", ".forge/eval/20250101-120000"));
 */
export function evalInstructions(rollout: EvalRollout, proxyUrl: string, dataDir: string): string {
  return [
    `rollout ${rollout.rollout_id} is open; point the harness at it:`,
    `  OpenAI-style (Chat, Completions, Responses):`,
    `    export OPENAI_BASE_URL=${rollout.openai_base_url}`,
    `    export OPENAI_API_KEY=${rollout.api_key}`,
    `  Anthropic-style (Messages):`,
    `    export ANTHROPIC_BASE_URL=${rollout.anthropic_base_url}`,
    `    export ANTHROPIC_API_KEY=${rollout.api_key}`,
    `read what was recorded (now, or after Ctrl-C; docs/eval.md):`,
    `  bun run forge analyze --data ${dataDir}                                  calls, tokens, latency`,
    `  bun run forge analyze --data ${dataDir} --db ${join(dataDir, "eval.duckdb")}   every call, for SQL:`,
    `    SELECT c.seq, c.model, c.prompt_tokens, c.completion_tokens, b.request_body, b.response_body`,
    `    FROM calls c JOIN call_bodies b USING (call_id) ORDER BY c.seq`,
    `  curl -H "authorization: Bearer <admin token>" ${proxyUrl}/control/rollouts/${rollout.rollout_id}   the rollout and its call count`,
  ].join("\n");
}
