/**
 * The forge-react adapter: runs ./main.ts with the Bun that runs forge, so nothing else
 * needs to be installed.
 */
import { fileURLToPath } from "node:url";
import { option, type HarnessAdapter } from "../types.ts";

/** Absolute path of the agent script (the sandbox binds the project read-only so it is visible). */
export const FORGE_REACT_MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

/**
 * @example
 * forgeReactAdapter(ctx).command; // [bun, ".../forge-react/main.ts", "--max-turns", "20"]
 */
export const forgeReactAdapter: HarnessAdapter = (ctx) => {
  const temperature = ctx.options?.temperature;
  return {
    command: [process.execPath, FORGE_REACT_MAIN, "--max-turns", String(option(ctx, "maxTurns", 20)), ...(typeof temperature === "number" ? ["--temperature", String(temperature)] : [])],
    env: { OPENAI_BASE_URL: ctx.baseUrlOpenAI, OPENAI_API_KEY: ctx.apiKey },
    files: [],
  };
};
