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
});
export type RegisterRollout = z.infer<typeof RegisterRolloutSchema>;

export const FinishRolloutSchema = z.strictObject({
  reward: z.number().finite(),
  status: z.enum(["ok", "failed", "infra_error", "timeout"]),
  verifier_output: z.string().optional(),
  error: z.string().optional(),
  metrics: z.record(z.string(), z.number().finite()).optional(),
});
export type FinishRollout = z.infer<typeof FinishRolloutSchema>;

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
