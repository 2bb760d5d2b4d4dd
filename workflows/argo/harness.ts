/**
 * What the harness container runs for a rollout: the argv, environment and config files that
 * point the harness at the rollout's proxy URLs. `command` is built in; the other harnesses
 * come from the harness adapters (`workflows/harnesses/`, issue 3), loaded when present.
 */
import type { Experiment } from "../../schemas/experiment.ts";

export type Registration = { rollout_id: string; api_key: string; openai_base_url: string; anthropic_base_url: string; policy_version?: number | string };
export type HarnessInvocation = { command: string[]; env: Record<string, string>; files: Record<string, string> };
export type HarnessContext = { experiment: Experiment; registration: Registration; instruction: string; workspace: string; home: string };

/** The variables every harness gets, whatever else its adapter adds. */
export function proxyEnv(context: HarnessContext): Record<string, string> {
  const { registration, experiment } = context;
  return {
    OPENAI_BASE_URL: registration.openai_base_url,
    OPENAI_API_KEY: registration.api_key,
    ANTHROPIC_BASE_URL: registration.anthropic_base_url,
    ANTHROPIC_API_KEY: registration.api_key,
    OPENAI_MODEL: experiment.spec.policy.model,
    FORGE_ROLLOUT_ID: registration.rollout_id,
    FORGE_MODEL: experiment.spec.policy.model,
    FORGE_INSTRUCTION: context.instruction,
    HOME: context.home,
  };
}

type AdapterModule = { prepareHarness?: (name: string, context: HarnessContext & { options: Record<string, unknown> }) => Promise<HarnessInvocation> | HarnessInvocation };

/**
 * Resolves the invocation for the experiment's harness.
 *
 * @example
 * const { command, env } = await harnessInvocation(context); // command harness: spec.harness.command
 */
export async function harnessInvocation(context: HarnessContext): Promise<HarnessInvocation> {
  const { harness } = context.experiment.spec;
  const env = proxyEnv(context);
  if (harness.name === "command") return { command: harness.command ?? [], env, files: {} };
  let adapters: AdapterModule;
  // A variable specifier: the adapters area may not exist in every checkout this file is built in.
  const specifier = "../harnesses/index.ts";
  try {
    adapters = (await import(specifier)) as AdapterModule;
  } catch (error) {
    throw new Error(`harness "${harness.name}": the harness adapters (workflows/harnesses) are not in this image: ${(error as Error).message}`);
  }
  if (!adapters.prepareHarness) throw new Error(`harness "${harness.name}": workflows/harnesses exports no prepareHarness(name, context)`);
  const invocation = await adapters.prepareHarness(harness.name, { ...context, options: harness.options });
  return { ...invocation, env: { ...env, ...invocation.env } };
}
