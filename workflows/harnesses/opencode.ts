/**
 * opencode (`opencode-ai`): a provider built on `@ai-sdk/openai-compatible` (bundled in the
 * binary, so nothing is fetched) with `options.baseURL` at the proxy. It also makes a title
 * call per session, which the proxy records like any other.
 */
import type { HarnessAdapter } from "./types.ts";
import { option } from "./types.ts";

/**
 * @example
 * opencodeAdapter(ctx).env.OPENCODE_CONFIG; // "<home>/opencode.json"
 */
export const opencodeAdapter: HarnessAdapter = (ctx) => {
  const configPath = `${ctx.homeDir}/opencode.json`;
  const config = {
    $schema: "https://opencode.ai/config.json",
    model: `forge/${ctx.model}`,
    small_model: `forge/${ctx.model}`,
    autoupdate: false,
    share: "disabled",
    permission: { edit: "allow", bash: "allow", webfetch: "deny" },
    provider: {
      forge: {
        npm: "@ai-sdk/openai-compatible",
        name: "OpenForge proxy",
        options: { baseURL: ctx.baseUrlOpenAI, apiKey: ctx.apiKey },
        // With a browser, screenshots must reach the model: opencode otherwise replaces every
        // image of a tool result with "this model does not support image input".
        models: { [ctx.model]: (ctx.mcpServers ?? []).length > 0 ? { name: ctx.model, attachment: true, modalities: { input: ["text", "image"], output: ["text"] } } : { name: ctx.model } },
      },
    },
    // MCP servers (a browser task's): opencode names their tools <server>_<tool>.
    ...((ctx.mcpServers ?? []).length > 0
      ? { mcp: Object.fromEntries((ctx.mcpServers ?? []).map((server) => [server.name, { type: "local", command: [server.command, ...server.args], enabled: true, timeout: 120000 }])) }
      : {}),
  };
  return {
    command: [option(ctx, "bin", "opencode"), "run", "--model", `forge/${ctx.model}`, ctx.prompt],
    env: {
      OPENCODE_CONFIG: configPath,
      OPENCODE_DISABLE_MODELS_FETCH: "1",
      OPENCODE_DISABLE_AUTOUPDATE: "1",
      OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
    },
    files: [{ path: configPath, content: `${JSON.stringify(config, null, 2)}\n` }],
  };
};
