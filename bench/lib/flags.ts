/**
 * The benchmarks' command-line flags: `--name value` and bare `--name`. Deliberately loose
 * (an unknown flag is ignored): these are measurement scripts, not the `forge` CLI.
 */

/**
 * Flags read from `argv` (default: this process's arguments).
 *
 * @example
 * const { flag, has } = benchFlags(); const seconds = Number(flag("seconds", "3")); const json = has("json");
 */
export function benchFlags(argv: string[] = process.argv.slice(2)): { flag(name: string, fallback: string): string; has(name: string): boolean } {
  return {
    flag(name, fallback) {
      const i = argv.indexOf(`--${name}`);
      return i >= 0 ? argv[i + 1]! : fallback;
    },
    has: (name) => argv.includes(`--${name}`),
  };
}
