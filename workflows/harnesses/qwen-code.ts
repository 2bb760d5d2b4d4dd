/**
 * Qwen Code (`@qwen-code/qwen-code`): the OpenAI auth type reads OPENAI_BASE_URL / KEY / MODEL;
 * `-y` (yolo) approves tools; usage statistics are turned off in `~/.qwen/settings.json`.
 */
import { option, type HarnessAdapter } from "./types.ts";

/**
 * @example
 * qwenCodeAdapter(ctx).command.slice(0, 3); // ["qwen", "--auth-type", "openai"]
 */
export const qwenCodeAdapter: HarnessAdapter = (ctx) => {
  // Both spellings: older releases read the top-level key, newer ones `privacy.*`.
  const settings = {
    usageStatisticsEnabled: false,
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    checkForUpdates: false,
    disableAutoUpdate: true,
  };
  return {
    command: [option(ctx, "bin", "qwen"), "--auth-type", "openai", "-y", "--model", ctx.model, "-p", ctx.prompt],
    env: { OPENAI_BASE_URL: ctx.baseUrlOpenAI, OPENAI_API_KEY: ctx.apiKey, OPENAI_MODEL: ctx.model },
    files: [{ path: `${ctx.homeDir}/.qwen/settings.json`, content: `${JSON.stringify(settings, null, 2)}\n` }],
  };
};
