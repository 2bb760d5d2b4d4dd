/**
 * pi (`@mariozechner/pi-coding-agent`): a custom provider in `$PI_CODING_AGENT_DIR/models.json`
 * with the API it speaks (`openai-completions` by default; `openai-responses` or
 * `anthropic-messages` through `options.api`), run in print mode.
 *
 * The model's `contextWindow` matters: pi compacts (a summarizer call) once a call's context
 * passes `contextWindow - 16384` (its default `compaction.reserveTokens`), and in print mode it
 * checks after the agent's final answer too. It is the experiment's `options.contextWindow`, else
 * the window the model's server reports (`ctx.contextWindow`), else 32768.
 */
import { option, type HarnessAdapter } from "./types.ts";

const APIS = ["openai-completions", "openai-responses", "anthropic-messages"] as const;

/** When neither the experiment nor the server gives the window (Qwen3's native 32,768). */
export const DEFAULT_CONTEXT_WINDOW = 32768;

/**
 * @example
 * piAdapter({ ...ctx, options: { api: "openai-completions" } }).command; // ["pi", "-p", "--provider", "forge", ...]
 */
export const piAdapter: HarnessAdapter = (ctx) => {
  const api: string = option(ctx, "api", "openai-completions");
  if (!(APIS as readonly string[]).includes(api)) throw new Error(`spec.harness.options.api: expected one of ${APIS.join(", ")}, got "${api}"`);
  const agentDir = `${ctx.homeDir}/.pi/agent`;
  const models = {
    providers: {
      forge: {
        baseUrl: api === "anthropic-messages" ? ctx.baseUrlAnthropic : ctx.baseUrlOpenAI,
        api,
        apiKey: ctx.apiKey,
        models: [
          {
            id: ctx.model,
            name: ctx.model,
            reasoning: option(ctx, "reasoning", false),
            input: ["text"],
            contextWindow: option(ctx, "contextWindow", ctx.contextWindow ?? DEFAULT_CONTEXT_WINDOW),
            maxTokens: option(ctx, "maxTokens", 4096),
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          },
        ],
      },
    },
  };
  return {
    command: [option(ctx, "bin", "pi"), "-p", "--provider", "forge", "--model", ctx.model, ctx.prompt],
    env: { PI_CODING_AGENT_DIR: agentDir, PI_SKIP_VERSION_CHECK: "1", PI_OFFLINE: "1" },
    files: [{ path: `${agentDir}/models.json`, content: `${JSON.stringify(models, null, 2)}\n` }],
  };
};
