/**
 * Codex (`@openai/codex`). It ignores OPENAI_BASE_URL and speaks only the Responses API, so a
 * custom provider in `$CODEX_HOME/config.toml` points it at the proxy's `/v1/responses`
 * (`wire_api = "chat"` is rejected by current versions).
 */
import { option, type HarnessAdapter } from "./types.ts";

const toml = (value: string) => JSON.stringify(value); // TOML basic strings share JSON's escapes

/**
 * @example
 * codexAdapter(ctx).command; // ["codex", "exec", "--skip-git-repo-check", ..., prompt]
 */
export const codexAdapter: HarnessAdapter = (ctx) => {
  const codexHome = `${ctx.homeDir}/.codex`;
  const config = [
    `model = ${toml(ctx.model)}`,
    `model_provider = "forge"`,
    `approval_policy = "never"`,
    `sandbox_mode = "danger-full-access"`,
    `check_for_update_on_startup = false`,
    ``,
    `[model_providers.forge]`,
    `name = "forge"`,
    `base_url = ${toml(ctx.baseUrlOpenAI)}`,
    `env_key = "FORGE_CODEX_API_KEY"`,
    `wire_api = "responses"`,
    ``,
    `[analytics]`,
    `enabled = false`,
    ``,
    `[features]`,
    `plugins = false`,
    ``,
    // MCP servers (a browser task's): codex names their tools mcp__<server>__<tool>. Required:
    // since 0.147 codex gives an optional server 1 s (mcp_optional_startup_grace_ms) before it
    // builds the first turn's tools without it, and Node + Playwright take longer on a loaded
    // machine (tests/gui/mcp-start.test.ts); a required one is waited for up to
    // startup_timeout_sec, and one that cannot start fails the run instead of playing it blind.
    ...(ctx.mcpServers ?? []).flatMap((server) => [
      `[mcp_servers.${server.name}]`,
      `command = ${toml(server.command)}`,
      `args = [${server.args.map(toml).join(", ")}]`,
      `required = true`,
      `startup_timeout_sec = 120`,
      `tool_timeout_sec = 120`,
      ``,
    ]),
  ].join("\n");
  return {
    command: [option(ctx, "bin", "codex"), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--cd", ctx.workspace, ctx.prompt],
    env: { CODEX_HOME: codexHome, FORGE_CODEX_API_KEY: ctx.apiKey },
    files: [{ path: `${codexHome}/config.toml`, content: config }],
  };
};
