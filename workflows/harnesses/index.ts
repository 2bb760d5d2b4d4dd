/**
 * Harness adapters: for each supported harness, the command, environment and config files that
 * point it at a rollout's proxy URLs, offline, non-interactive, telemetry off.
 */
import type { Experiment } from "../../schemas/index.ts";
import { claudeCodeAdapter } from "./claude-code.ts";
import { codexAdapter } from "./codex.ts";
import { commandAdapter } from "./command.ts";
import { commonEnv } from "./env.ts";
import { forgeReactAdapter } from "./forge-react/index.ts";
import { findOpenclaw, openclawAdapter } from "./openclaw.ts";
import { opencodeAdapter } from "./opencode.ts";
import { piAdapter } from "./pi.ts";
import { qwenCodeAdapter } from "./qwen-code.ts";
import type { HarnessAdapter, HarnessContext, HarnessLaunch } from "./types.ts";

export { claudeCodeAdapter, codexAdapter, commandAdapter, commonEnv, forgeReactAdapter, openclawAdapter, opencodeAdapter, piAdapter, qwenCodeAdapter };
export { FORGE_REACT_MAIN } from "./forge-react/index.ts";
export { modelContextWindow } from "./context-window.ts";
export type { HarnessAdapter, HarnessContext, HarnessFile, HarnessLaunch, McpServer } from "./types.ts";

export const HARNESS_ADAPTERS: Record<string, HarnessAdapter> = {
  codex: codexAdapter,
  "claude-code": claudeCodeAdapter,
  opencode: opencodeAdapter,
  "qwen-code": qwenCodeAdapter,
  pi: piAdapter,
  openclaw: openclawAdapter,
  command: commandAdapter,
  "forge-react": forgeReactAdapter,
};

/**
 * The binary each CLI harness needs on PATH (forge-react and command need none of their own;
 * openclaw runs on its own Node 24, see `findOpenclaw`).
 */
export const HARNESS_BINARIES: Record<string, string | undefined> = {
  codex: "codex",
  "claude-code": "claude",
  opencode: "opencode",
  "qwen-code": "qwen",
  pi: "pi",
};

/**
 * Why a harness cannot run on this machine, or undefined when it can.
 *
 * @example
 * harnessUnavailable("codex") // "`codex` is not on PATH" where it is not installed
 */
export function harnessUnavailable(harness: string): string | undefined {
  if (harness === "openclaw") {
    try {
      findOpenclaw();
      return undefined;
    } catch (error) {
      return (error as Error).message;
    }
  }
  const binary = HARNESS_BINARIES[harness];
  return !binary || Bun.which(binary) !== null ? undefined : `\`${binary}\` is not on PATH`;
}

/** Harnesses whose adapters give them `ctx.mcpServers` (a browser task's tools, docs/gui.md). */
export const MCP_HARNESSES = ["claude-code", "codex", "opencode"];

/**
 * The launch for a harness by name, with the common proxy variables merged under the
 * adapter's own.
 *
 * @example
 * const launch = launchHarness("forge-react", ctx);
 * launch.env.OPENAI_BASE_URL; // ctx.baseUrlOpenAI
 */
export function launchHarness(name: string, ctx: HarnessContext): HarnessLaunch {
  const adapter = HARNESS_ADAPTERS[name];
  if (!adapter) throw new Error(`harness "${name}" has no adapter (known: ${Object.keys(HARNESS_ADAPTERS).join(", ")})`);
  if ((ctx.mcpServers ?? []).length > 0 && !MCP_HARNESSES.includes(name)) {
    throw new Error(`harness "${name}" is not given MCP servers (${ctx.mcpServers!.map((server) => server.name).join(", ")}), which a browser task needs: use one of ${MCP_HARNESSES.join(", ")} (docs/gui.md)`);
  }
  const launch = adapter(ctx);
  return { ...launch, env: { ...commonEnv(ctx), ...launch.env } };
}

type ArgoHarnessContext = {
  experiment: Experiment;
  registration: { rollout_id: string; api_key: string; openai_base_url: string; anthropic_base_url: string };
  instruction: string;
  workspace: string;
  home: string;
  options: Record<string, unknown>;
};

/**
 * The entry point workflows/argo/harness.ts loads inside a rollout pod: same adapters, its
 * context shape, files as path → content.
 *
 * @example
 * const { command, env, files } = prepareHarness("pi", argoContext);
 */
export function prepareHarness(name: string, context: ArgoHarnessContext): { command: string[]; env: Record<string, string>; files: Record<string, string> } {
  const launch = launchHarness(name, {
    baseUrlOpenAI: context.registration.openai_base_url,
    baseUrlAnthropic: context.registration.anthropic_base_url,
    apiKey: context.registration.api_key,
    model: context.experiment.spec.policy.model,
    workspace: context.workspace,
    homeDir: context.home,
    prompt: context.instruction,
    options: context.options,
    command: context.experiment.spec.harness.command,
  });
  return { command: launch.command, env: launch.env, files: Object.fromEntries(launch.files.map((file) => [file.path, file.content])) };
}
