/**
 * Any program (`harness.name: command`, argv in `spec.harness.command`): it gets the common
 * variables (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, FORGE_PROMPT,
 * FORGE_MODEL); `{prompt}` / `{model}` / `{workspace}` in an argument are replaced.
 */
import type { HarnessAdapter } from "./types.ts";

/**
 * @example
 * commandAdapter({ ...ctx, command: ["my-agent", "--task", "{prompt}"] }).command[2]; // the instruction
 */
export const commandAdapter: HarnessAdapter = (ctx) => {
  const argv = ctx.command ?? (ctx.options?.command as string[] | undefined);
  if (!argv || argv.length === 0) throw new Error('harness "command": spec.harness.command must give the program\'s argv, e.g. [python, agent.py]');
  const fill = (arg: string) => arg.replaceAll("{prompt}", ctx.prompt).replaceAll("{model}", ctx.model).replaceAll("{workspace}", ctx.workspace);
  return { command: argv.map(fill), env: {}, files: [] };
};
