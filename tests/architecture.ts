/**
 * The areas of the project and the rules between them (docs/architecture.md), as data the
 * import-scan test checks.
 */
import { readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

/** A top-level folder of the source with one public face (`index.ts`). */
export type Area = "lib" | "schemas" | "model" | "records" | "trajectories" | "simulator" | "proxy" | "analytics" | "workflows" | "gitops" | "bin" | "tests" | "bench";

/** Which areas each area may import. `*`: any, through their faces. */
export const AREAS: Record<Area, { dependsOn: Area[] | "*"; what: string }> = {
  lib: { dependsOn: [], what: "CLI argument parsing, SSE (one reader of recorded streams), byte joins, SQL string literals, the byte-level BPE alphabet, common prefixes of token ids, own copies of strings a cache keeps, a map bounded by weight: building blocks that own nothing" },
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

/** The areas with a public face (`index.ts`) that other areas import. */
export const FACED_AREAS = (Object.keys(AREAS) as Area[]).filter((a) => a !== "bin" && a !== "tests" && a !== "bench");

// Comments at the start of a line (a doc comment may show an import that is not one).
const stripComments = (text: string): string => text.replace(/^\s*\/\*[\s\S]*?\*\//gm, "").replace(/^\s*\/\/.*$/gm, "");
/** `a, type B, c as d` → the names before `as` (imported) or after it (exported). */
function nameList(list: string, side: "imported" | "exported"): string[] {
  return list
    .split(",")
    .map((part) => part.trim().replace(/^type\s+/, ""))
    .filter(Boolean)
    .map((part) => {
      const [name, alias] = part.split(/\s+as\s+|\s*:\s*/);
      return (side === "exported" ? (alias ?? name) : name)!.trim();
    });
}

/**
 * The names a module exports, following `export *` (and `export type *`) into the files it names.
 * A regex scan of declarations and export lists, enough for this project's faces.
 */
export function moduleExports(file: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(file)) return names;
  seen.add(file);
  const text = stripComments(readFileSync(file, "utf8"));
  for (const m of text.matchAll(/^export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\*?|class|const|let|var|interface|type|enum)\s+(\w+)/gm)) names.add(m[1]!);
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)) for (const n of nameList(m[1]!, "exported")) names.add(n);
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\*\s+as\s+(\w+)\s+from/gm)) names.add(m[1]!);
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\*\s+from\s*["']([^"']+)["']/gm)) {
    if (!m[1]!.startsWith(".")) continue;
    for (const n of moduleExports(join(dirname(file), m[1]!), seen)) names.add(n);
  }
  return names;
}

/** Where one face name is imported: the files, relative to the root. */
export type FaceUse = { area: Area; name: string; file: string };

/**
 * Every use of a face's names by a file outside its area: named, namespace (`ns.name`),
 * re-exported, dynamic (`const { a } = await import(…)`, also inside `Promise.all([…])`) and
 * `import("…").Name` types. `texts` maps a file (relative to `root`) to its text; `.md` files
 * are read as if at the root (their code samples import `./area/index.ts`).
 */
export function faceUses(texts: Map<string, string>): FaceUse[] {
  const uses: FaceUse[] = [];
  for (const [file, raw] of texts) {
    const text = file.endsWith(".md") ? raw : stripComments(raw);
    const base = file.endsWith(".md") ? "" : dirname(file);
    const from = areaOf(file);
    const faceOf = (spec: string): Area | undefined => {
      if (!spec.startsWith(".")) return undefined;
      const target = normalize(join(base, spec));
      const area = areaOf(target);
      return area && area !== from && target === `${area}/index.ts` ? area : undefined;
    };
    const add = (area: Area | undefined, names: string[]) => {
      if (area) for (const name of names) uses.push({ area, name, file });
    };
    for (const m of text.matchAll(/^(?:import|export)\s+(?:type\s+)?(?:\w+\s*,\s*)?\{([^}]*)\}\s*from\s*["']([^"']+)["']/gm)) add(faceOf(m[2]!), nameList(m[1]!, "imported"));
    for (const m of text.matchAll(/^import\s+(?:type\s+)?\*\s+as\s+(\w+)\s+from\s*["']([^"']+)["']/gm)) {
      const area = faceOf(m[2]!);
      if (area) add(area, [...text.matchAll(new RegExp(`\\b${m[1]}\\.(\\w+)`, "g"))].map((u) => u[1]!));
    }
    for (const m of text.matchAll(/\{([^{}]*)\}\s*=\s*await\s+import\(\s*["']([^"']+)["']\s*\)/g)) add(faceOf(m[2]!), nameList(m[1]!, "imported"));
    for (const m of text.matchAll(/\[((?:\s*\{[^{}]*\}\s*,?)+)\]\s*=\s*await\s+Promise\.all\(\s*\[([^\]]*)\]\s*\)/g)) {
      const patterns = [...m[1]!.matchAll(/\{([^{}]*)\}/g)].map((p) => p[1]!);
      const specs = [...m[2]!.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g)].map((s) => s[1]!);
      specs.forEach((spec, i) => add(faceOf(spec), nameList(patterns[i] ?? "", "imported")));
    }
    for (const m of text.matchAll(/import\(\s*["']([^"']+)["']\s*\)\.(\w+)/g)) add(faceOf(m[1]!), [m[2]!]);
  }
  return uses;
}

/**
 * The faces rule (docs/architecture.md): each name a face exports is imported by some file
 * outside its area that is no test code (another area's source, bin/, examples/, or a code
 * sample in docs/). One problem per name that is not, saying where it belongs instead.
 *
 * @example
 * faceProblems(new Map([["lib", new Set(["a"])]]), []) // ["lib/index.ts exports a, which no file outside lib/ imports: …"]
 */
export function faceProblems(exports: Map<Area, Set<string>>, uses: FaceUse[]): string[] {
  const problems: string[] = [];
  for (const [area, names] of exports) {
    for (const name of [...names].sort()) {
      const users = [...new Set(uses.filter((u) => u.area === area && u.name === name).map((u) => u.file))];
      if (users.some((file) => !isTestFile(file))) continue;
      problems.push(
        users.length
          ? `${area}/index.ts exports ${name}, which outside ${area}/ only test code imports (${users.join(", ")}): export it from ${area}/testing.ts and import it from there (bench/ imports the module itself)`
          : `${area}/index.ts exports ${name}, which no file outside ${area}/ imports: remove it from the face (files inside ${area}/ import it from its own module)`,
      );
    }
  }
  return problems;
}
