/**
 * Bodies of the proxy's control API (docs/contracts.md, docs/proxy.md), validated with zod.
 */
import { z } from "zod";

const id = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, "letters, digits and . _ : - only, starting with a letter or digit (it appears in URLs)");

export const RegisterRolloutSchema = z.strictObject({
  rollout_id: id.optional(),
  experiment: z.string().min(1),
  iteration: z.number().int().min(0).optional(),
  task_id: z.string().min(1),
  group: z.string().optional(),
  attempt: z.number().int().min(0).optional(),
  harness: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  /** A retry: the id of the rollout's first try. Its earlier unfinished tries are finished as superseded. */
  retry_of: id.optional(),
  /** Which retry this is (1 for the first retry); with retry_of. */
  retry: z.number().int().min(1).optional(),
  /**
   * The rollout's own inference servers (OpenAI base URLs, e.g. veRL's replicas): every call of
   * this rollout goes to them instead of the proxy's upstreams.
   */
  upstreams: z
    .array(z.url({ protocol: /^https?$/, error: "an http(s) URL such as http://10.0.0.5:41877/v1" }))
    .min(1)
    .max(64)
    .optional(),
  /** Policy version of the weights that serve this rollout (veRL's global step): its calls are recorded with it. */
  policy_version: z.number().int().min(0).optional(),
  /** Sampling the proxy sets on every call of this rollout, whatever the harness asked for (veRL's rollout config). */
  sampling: z
    .strictObject({
      temperature: z.number().finite().min(0).optional(),
      top_p: z.number().finite().gt(0).max(1).optional(),
      top_k: z.number().int().min(-1).optional(),
    })
    .optional(),
});
export type RegisterRollout = z.infer<typeof RegisterRolloutSchema>;

/**
 * The Rollout label that marks a trainer's validation rollout (veRL's `_validate` pass): kept
 * out of training exports and reported apart in analytics.
 */
export const VALIDATION_LABEL = "openforge.dev/validation";

export const FinishRolloutSchema = z.strictObject({
  reward: z.number().finite(),
  status: z.enum(["ok", "failed", "infra_error", "timeout"]),
  verifier_output: z.string().optional(),
  error: z.string().optional(),
  metrics: z.record(z.string(), z.number().finite()).optional(),
});
export type FinishRollout = z.infer<typeof FinishRolloutSchema>;

/**
 * Cancels a rollout whose trainer gave up on it (a session that timed out or failed): its new
 * calls are refused (409), those in flight aborted and recorded, then the result written.
 */
export const CancelRolloutSchema = z.strictObject({
  /** Why: recorded as the result's error. */
  reason: z.string().min(1).max(2000),
  /** The result's status: infra_error (default: not the policy's doing) or timeout. */
  status: z.enum(["infra_error", "timeout"]).optional(),
});
export type CancelRollout = z.infer<typeof CancelRolloutSchema>;

export const PauseSchema = z.strictObject({
  timeout_ms: z.number().int().min(0).optional(),
});
export type Pause = z.infer<typeof PauseSchema>;

export const ResumeSchema = z.strictObject({
  policy_version: z.number().int().min(0),
});
export type Resume = z.infer<typeof ResumeSchema>;

/**
 * One line naming each problem of a zod error: `field: message`.
 *
 * @example
 * zodProblems(FinishRolloutSchema.safeParse({}).error!) // "reward: Invalid input: expected number, received undefined; status: ..."
 */
export function zodProblems(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join(".") : "(body)"}: ${i.message}`).join("; ");
}
