/**
 * Claude Code (`@anthropic-ai/claude-code`): Anthropic Messages at ANTHROPIC_BASE_URL, print
 * mode, tools allowed up front (there is nobody to answer a permission prompt).
 */
import { option, type HarnessAdapter } from "./types.ts";

/**
 * @example
 * claudeCodeAdapter(ctx).env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC; // "1"
 */
export const claudeCodeAdapter: HarnessAdapter = (ctx) => ({
  command: [
    option(ctx, "bin", "claude"),
    "-p",
    ctx.prompt,
    "--model",
    ctx.model,
    "--allowedTools",
    option(ctx, "allowedTools", ["Bash", "Read", "Write", "Edit", "Glob", "Grep"]).join(","),
    "--max-turns",
    String(option(ctx, "maxTurns", 30)),
  ],
  env: {
    ANTHROPIC_BASE_URL: ctx.baseUrlAnthropic,
    ANTHROPIC_API_KEY: ctx.apiKey,
    ANTHROPIC_MODEL: ctx.model,
    ANTHROPIC_SMALL_FAST_MODEL: ctx.model,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
  },
  files: [],
});
