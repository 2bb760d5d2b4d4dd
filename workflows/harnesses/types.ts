/** The shape every harness adapter has: rollout facts in, a launch description out. */

export type HarnessContext = {
  /** `<proxy>/r/<rollout>/v1` (OpenAI-style clients append /chat/completions, /responses). */
  baseUrlOpenAI: string;
  /** `<proxy>/r/<rollout>` (Anthropic clients append /v1/messages). */
  baseUrlAnthropic: string;
  /** The rollout's per-rollout key; the proxy maps it back to the rollout. */
  apiKey: string;
  model: string;
  /** The rollout's working directory (the harness's cwd). */
  workspace: string;
  /** A private HOME for the harness: its config and state go here, never the user's. */
  homeDir: string;
  /** The task instruction. */
  prompt: string;
  /** `spec.harness.options` from the experiment. */
  options?: Record<string, unknown>;
  /** `spec.harness.command`, for the `command` harness. */
  command?: string[];
  /**
   * The model's context window as its server reports it (`modelContextWindow`: vLLM's / SGLang's
   * `/v1/models` `max_model_len`), when known. Adapters of harnesses that must be told use it
   * unless the experiment sets one (`spec.harness.options.contextWindow`).
   */
  contextWindow?: number;
  /**
   * MCP servers the harness must be given (a browser task's Playwright server, docs/gui.md):
   * adapters of harnesses that speak MCP write them into the harness's own configuration;
   * `launchHarness` refuses them for a harness that cannot take them.
   */
  mcpServers?: McpServer[];
};

/** A stdio MCP server: the harness starts `command args…` and speaks MCP over its stdin/stdout. */
export type McpServer = { name: string; command: string; args: string[] };

export type HarnessFile = { path: string; content: string };

export type HarnessLaunch = {
  /** argv; run with cwd = workspace. */
  command: string[];
  /** Added to the rollout's environment (which already has the common proxy variables). */
  env: Record<string, string>;
  /** Config files to write before the launch (absolute paths, under homeDir or workspace). */
  files: HarnessFile[];
};

export type HarnessAdapter = (ctx: HarnessContext) => HarnessLaunch;

/** Options are user-written YAML: read them with a type check so a typo is reported, not ignored. */
export function option<T extends string | number | boolean | string[]>(ctx: HarnessContext, name: string, fallback: T): T {
  const value = ctx.options?.[name];
  if (value === undefined) return fallback;
  const ok = Array.isArray(fallback) ? Array.isArray(value) && value.every((v) => typeof v === "string") : typeof value === typeof fallback;
  if (!ok) throw new Error(`spec.harness.options.${name}: expected ${Array.isArray(fallback) ? "a list of strings" : `a ${typeof fallback}`}, got ${JSON.stringify(value)}`);
  return value as T;
}
