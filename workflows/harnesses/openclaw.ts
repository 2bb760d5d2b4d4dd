/**
 * OpenClaw (needs Node ≥ 24): an `openclaw.json` with an `openai-completions` provider at the
 * proxy. It re-appends an internal-context message each turn and renames tool-call ids, so its
 * prompts are not prefix extensions of each other; the proxy's trajectory assembly handles that.
 */
import { option, type HarnessAdapter } from "./types.ts";

/**
 * @example
 * openclawAdapter(ctx).command[1]; // "agent"
 */
export const openclawAdapter: HarnessAdapter = (ctx) => {
  const configPath = `${ctx.homeDir}/.openclaw/openclaw.json`;
  const config = {
    models: {
      providers: {
        forge: { baseUrl: ctx.baseUrlOpenAI, apiKey: ctx.apiKey, api: "openai-completions", models: [{ id: ctx.model, name: ctx.model }] },
      },
    },
  };
  return {
    command: [option(ctx, "bin", "openclaw"), "agent", "exec", "--config", configPath, "--model", `forge/${ctx.model}`, "--cwd", ctx.workspace, ctx.prompt],
    env: { OPENCLAW_CONFIG: configPath },
    files: [{ path: configPath, content: `${JSON.stringify(config, null, 2)}\n` }],
  };
};
