/**
 * Claude Code (`@anthropic-ai/claude-code`): Anthropic Messages at ANTHROPIC_BASE_URL, print
 * mode, tools allowed up front (there is nobody to answer a permission prompt). MCP servers (a
 * browser task's) go in `<home>/.claude-mcp.json`, passed with `--mcp-config` and
 * `--strict-mcp-config` (no other MCP configuration is read), their tools allowed as
 * `mcp__<server>`.
 */
import { option, type HarnessAdapter, type HarnessFile } from "./types.ts";

/**
 * @example
 * claudeCodeAdapter(ctx).env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC; // "1"
 */
export const claudeCodeAdapter: HarnessAdapter = (ctx) => {
  const servers = ctx.mcpServers ?? [];
  const files: HarnessFile[] = [];
  const mcpArgs: string[] = [];
  if (servers.length > 0) {
    const path = `${ctx.homeDir}/.claude-mcp.json`;
    const config = { mcpServers: Object.fromEntries(servers.map((server) => [server.name, { type: "stdio", command: server.command, args: server.args }])) };
    files.push({ path, content: `${JSON.stringify(config, null, 2)}\n` });
    mcpArgs.push("--mcp-config", path, "--strict-mcp-config");
  }
  const allowed = [...option(ctx, "allowedTools", ["Bash", "Read", "Write", "Edit", "Glob", "Grep"]), ...servers.map((server) => `mcp__${server.name}`)];
  return {
    command: [
      option(ctx, "bin", "claude"),
      "-p",
      ctx.prompt,
      "--model",
      ctx.model,
      "--allowedTools",
      allowed.join(","),
      "--max-turns",
      String(option(ctx, "maxTurns", 30)),
      ...mcpArgs,
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
      // Chromium's start in a loaded sandbox can pass the default 30 s MCP start-up wait. And
      // since 2.1.119 (fixed in 2.1.221), print mode connects --mcp-config servers in the
      // background, waiting 5 s at most: a server slower than that (Node's start on a loaded
      // machine) leaves the first turn without the browser's tools, and the model writes its
      // tool calls as text. These two make 2.1.197 wait for the server as long as MCP_TIMEOUT
      // (tests/gui/mcp-start.test.ts starts the server 7 s late).
      ...(servers.length > 0 ? { MCP_TIMEOUT: "120000", MCP_TOOL_TIMEOUT: "120000", MCP_CONNECTION_NONBLOCKING: "false", MCP_CONNECT_TIMEOUT_MS: "120000" } : {}),
    },
    files,
  };
};
