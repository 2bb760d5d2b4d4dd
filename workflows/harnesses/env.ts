/** The variables every harness process gets, whatever its adapter adds on top. */
import type { HarnessContext } from "./types.ts";

/**
 * OpenAI / Anthropic variables that point any SDK-based program at the proxy, a private HOME,
 * and the switches that keep Node CLIs offline and quiet.
 *
 * @example
 * commonEnv(ctx).OPENAI_BASE_URL; // "http://127.0.0.1:8080/r/abc/v1"
 */
export function commonEnv(ctx: HarnessContext): Record<string, string> {
  return {
    OPENAI_BASE_URL: ctx.baseUrlOpenAI,
    OPENAI_API_KEY: ctx.apiKey,
    ANTHROPIC_BASE_URL: ctx.baseUrlAnthropic,
    ANTHROPIC_API_KEY: ctx.apiKey,
    FORGE_MODEL: ctx.model,
    FORGE_PROMPT: ctx.prompt,
    FORGE_WORKSPACE: ctx.workspace,
    HOME: ctx.homeDir,
    XDG_CONFIG_HOME: `${ctx.homeDir}/.config`,
    XDG_DATA_HOME: `${ctx.homeDir}/.local/share`,
    XDG_CACHE_HOME: `${ctx.homeDir}/.cache`,
    XDG_STATE_HOME: `${ctx.homeDir}/.local/state`,
    // No update checks, no colours in captured logs, no interactive prompts.
    NO_UPDATE_NOTIFIER: "1",
    NPM_CONFIG_UPDATE_NOTIFIER: "false",
    DO_NOT_TRACK: "1",
    NO_COLOR: "1",
    CI: "1",
    TERM: "dumb",
  };
}
