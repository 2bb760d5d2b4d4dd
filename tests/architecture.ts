/**
 * The areas of the project and the rules between them (docs/architecture.md), as data the
 * import-scan test checks.
 */
import { readFileSync } from "node:fs";

/** A top-level folder of the source with one public face (`index.ts`). */
export type Area = "lib" | "schemas" | "model" | "records" | "trajectories" | "simulator" | "proxy" | "analytics" | "workflows" | "gitops" | "bin" | "tests" | "bench";

/** Which areas each area may import. `*`: any, through their faces. */
export const AREAS: Record<Area, { dependsOn: Area[] | "*"; what: string }> = {
  lib: { dependsOn: [], what: "CLI argument parsing, SSE (one reader of recorded streams), byte joins, SQL string literals, the byte-level BPE alphabet, common prefixes of token ids: building blocks that own nothing" },
  schemas: { dependsOn: [], what: "the record format (protobuf) and the zod schemas of every file and body a user writes" },
  model: { dependsOn: ["schemas", "lib"], what: "the model's side of the wire: its tokenizer, its chat template run by a real Jinja engine, the parsers of its output" },
  records: { dependsOn: ["schemas", "lib"], what: "the segment log: record encoding, append, read, recovery" },
  trajectories: { dependsOn: ["records", "schemas", "lib"], what: "records → samples, rewards, groups, export" },
  simulator: { dependsOn: ["model", "schemas", "lib"], what: "the policy simulator: a stand-in for vLLM / SGLang" },
  proxy: { dependsOn: ["model", "records", "trajectories", "schemas", "lib"], what: "the recording proxy: front doors, capture, upstream, control API" },
  analytics: { dependsOn: ["records", "trajectories", "schemas", "lib"], what: "DuckDB metrics and reports over the log" },
  workflows: { dependsOn: ["proxy", "simulator", "records", "trajectories", "analytics", "schemas", "lib"], what: "tasks, harnesses, the local executor, Argo" },
  gitops: { dependsOn: ["workflows", "schemas", "lib"], what: "experiments in a git repo, commit-triggered runs" },
  bin: { dependsOn: "*", what: "the forge CLI: dispatches to each area's cli.ts" },
  tests: { dependsOn: "*", what: "cross-area and end-to-end tests" },
  bench: { dependsOn: "*", what: "benchmarks (they may time an area's internals)" },
};

const SOURCE = /\.(ts|tsx|mts)$/;

/** The project's own TypeScript files, relative to `root` (git's view: tracked and not ignored). */
export function projectFiles(root: string): string[] {
  const run = Bun.spawnSync(["git", "ls-files", "--cached", "--others", "--exclude-standard"], { cwd: root, stdout: "pipe" });
  return run.stdout
    .toString()
    .split("\n")
    .filter((f) => SOURCE.test(f) && !f.startsWith("schemas/gen/") && !f.includes("/fixtures/"));
}

/** The area of a path relative to the root, or undefined for files outside every area. */
export function areaOf(path: string): Area | undefined {
  const top = path.split("/")[0]!;
  return path.includes("/") && top in AREAS ? (top as Area) : undefined;
}

/** Unit tests, test helpers, integration tests and benchmarks. */
export const isTestFile = (path: string): boolean => /\.test\.ts$/.test(path) || /(^|\/)testing\.ts$/.test(path) || path.startsWith("tests/") || path.startsWith("bench/");

/**
 * Whether `from` may import `target` of another area: its `index.ts`; its `testing.ts` from
 * test code; its `cli.ts` from the CLI (bin/); anything from a benchmark.
 */
export function isFaceFor(from: string, target: string): boolean {
  const area = areaOf(target)!;
  const rest = target.slice(area.length + 1);
  if (rest === "index.ts") return true;
  if (rest === "testing.ts" && isTestFile(from)) return true;
  if (rest === "cli.ts" && from.startsWith("bin/")) return true;
  return from.startsWith("bench/");
}

const transpiler = new Bun.Transpiler({ loader: "ts" });
// Static imports and re-exports, type-only ones included (the transpiler drops those): a
// statement at the start of a line up to its `from "…"`.
const STATIC = /^(?:import|export)\b[^;"'`]*?\bfrom\s*["']([^"']+)["']/gm;
const BARE = /^import\s*["']([^"']+)["']/gm;

/**
 * The module specifiers a file imports: static, type-only, re-exports and dynamic imports.
 *
 * @example
 * importsOf('import type { A } from "./a.ts";', true) // ["./a.ts"]
 */
export function importsOf(pathOrText: string, isText = false): string[] {
  const text = isText ? pathOrText : readFileSync(pathOrText, "utf8");
  const found = new Set<string>();
  for (const m of text.matchAll(STATIC)) found.add(m[1]!);
  for (const m of text.matchAll(BARE)) found.add(m[1]!);
  // A shebang line is not TypeScript.
  for (const i of transpiler.scanImports(text.replace(/^#!.*/, ""))) if (i.kind === "dynamic-import") found.add(i.path);
  return [...found];
}
