/**
 * What the harness container runs for a rollout: the workflows area's harness adapters
 * (workflows/harnesses) given the rollout's proxy URLs and key, as argv, environment and
 * config files (written by the harness container itself: only volumes are shared in the pod).
 */
import type { Experiment } from "../../schemas/index.ts";
import { launchHarness, type McpServer } from "../harnesses/index.ts";

export type Registration = { rollout_id: string; api_key: string; openai_base_url: string; anthropic_base_url: string; policy_version?: number | string };
export type HarnessInvocation = {
  command: string[];
  env: Record<string, string>;
  files: Record<string, string>;
  /**
   * What must exist in the harness image before the harness starts (a path, or a command on
   * PATH), with the message when it does not: a browser task's Chromium, node and MCP server.
   */
  preflight?: { path: string; why: string }[];
};
export type HarnessContext = {
  experiment: Experiment;
  registration: Registration;
  instruction: string;
  workspace: string;
  home: string;
  /** The model's context window as served (`modelContextWindow`), when known. */
  contextWindow?: number;
  /** A browser task's MCP server (gui.ts podBrowserServer) and what the harness image must hold for it. */
  browser?: { server: McpServer; preflight: { path: string; why: string }[] };
  /** A task's site, as the pod serves it: `{site_url}` in the instruction, `$FORGE_SITE_URL`. */
  siteUrl?: string;
};

/**
 * Resolves the invocation for the experiment's harness.
 *
 * @example
 * const { command, env } = harnessInvocation(context); // env.OPENAI_BASE_URL = the rollout's /r/<id>/v1
 */
export function harnessInvocation(context: HarnessContext): HarnessInvocation {
  const { experiment, registration } = context;
  const launch = launchHarness(experiment.spec.harness.name, {
    baseUrlOpenAI: registration.openai_base_url,
    baseUrlAnthropic: registration.anthropic_base_url,
    apiKey: registration.api_key,
    model: experiment.spec.policy.model,
    workspace: context.workspace,
    homeDir: context.home,
    prompt: context.siteUrl ? context.instruction.replaceAll("{site_url}", context.siteUrl) : context.instruction,
    options: experiment.spec.harness.options,
    command: experiment.spec.harness.command,
    contextWindow: context.contextWindow,
    ...(context.browser ? { mcpServers: [context.browser.server] } : {}),
  });
  return {
    command: launch.command,
    env: { HOME: context.home, FORGE_ROLLOUT_ID: registration.rollout_id, ...launch.env, ...(context.siteUrl ? { FORGE_SITE_URL: context.siteUrl } : {}) },
    files: Object.fromEntries(launch.files.map((file) => [file.path, file.content])),
    ...(context.browser ? { preflight: context.browser.preflight } : {}),
  };
}
