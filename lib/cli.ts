/**
 * Shared helpers for the `forge` subcommands: argument parsing with `--help`,
 * and the usage error that maps to exit code 2.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** A mistake in how the command was called: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type CommandSpec<O extends NonNullable<ParseArgsConfig["options"]>> = {
  /** `forge NAME`. */
  name: string;
  /** One line per flag and the synopsis; printed by `--help` and on a usage error. */
  usage: string;
  options: O;
  allowPositionals?: boolean;
};

/**
 * Parses argv for one subcommand. Returns null when `--help` was asked for
 * (the usage has been printed); throws UsageError naming the bad flag otherwise.
 *
 * @example
 * const args = parseCommand({ name: "proxy", usage, options: { listen: { type: "string" } } }, argv);
 * if (!args) return 0;
 */
export function parseCommand<O extends NonNullable<ParseArgsConfig["options"]>>(
  spec: CommandSpec<O>,
  argv: string[],
) {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(spec.usage.trim());
    return null;
  }
  try {
    return parseArgs({ args: argv, options: spec.options, allowPositionals: spec.allowPositionals ?? false, strict: true });
  } catch (error) {
    throw new UsageError(`forge ${spec.name}: ${argumentProblem(error as Error & { code?: string })}\n\n${spec.usage.trim()}`);
  }
}

/**
 * node:util parseArgs's errors in the words of this CLI: its raw text ("Unknown option
 * '--x'. To specify a positional argument starting with a '-', place it at the end of the
 * command after '--', as in ...") is written for the author of a program, not its user.
 */
function argumentProblem(error: Error & { code?: string }): string {
  const option = /'(-[^' ]+)/.exec(error.message)?.[1];
  const argument = /argument '([^']*)'/.exec(error.message)?.[1];
  switch (error.code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown option ${option ?? error.message}`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return /does not take an argument/.test(error.message) ? `option ${option} takes no value` : `option ${option} needs a value`;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return `unexpected argument "${argument ?? error.message}"`;
    default:
      return error.message;
  }
}

/** Reads an integer flag, naming the flag when it is not one. */
export function intFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new UsageError(`--${name} must be an integer, got "${value}"`);
  return parsed;
}

/** Resolves when the process is asked to stop (Ctrl-C or SIGTERM). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
}
