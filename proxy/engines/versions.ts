/**
 * Engine versions: parsing what an engine reports ("0.33.0", "0.13.0rc2+cu128",
 * "0.5.23.post1") and the oldest releases the proxy trains against.
 */

/**
 * The leading numbers of a version string, or undefined when it has none.
 *
 * @example
 * parseVersion("0.13.0rc2+cu128") // [0, 13, 0]
 */
export function parseVersion(version: string): number[] | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(version.trim());
  if (!match) return undefined;
  return [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)];
}

/**
 * Whether `version` is at least `minimum` (pre-releases of the minimum count as it: a build
 * that carries a fix carries it in its release candidates too). Unparsable → false.
 *
 * @example
 * atLeast("0.33.0", "0.13.0") // true
 * atLeast("0.12.0", "0.13.0") // false
 */
export function atLeast(version: string, minimum: string): boolean {
  const have = parseVersion(version);
  const want = parseVersion(minimum)!;
  if (!have) return false;
  for (let i = 0; i < 3; i++) if (have[i]! !== want[i]!) return have[i]! > want[i]!;
  return true;
}

/**
 * The oldest release of each engine that gives the ids training needs, and why
 * (docs/engines.md has the history).
 */
export const MINIMUM_TRAIN_VERSION = {
  vllm: {
    version: "0.13.0",
    why: "vLLM before 0.13.0 drops the token ids of streamed chunks its tool parser holds back (vllm-project/vllm#27482, fixed by #29074 in 0.13.0)",
  },
  sglang: {
    version: "0.5.20",
    why: "SGLang before 0.5.20 returns no token ids on a streamed chat (return_input_ids_in_sglext / return_output_ids_in_sglext came in 0.5.20)",
  },
} as const;

/** The versions the engine stand-ins and docs/engines.md follow. */
export const PINNED_VERSIONS = { vllm: "0.33.0", sglang: "0.5.23" } as const;
