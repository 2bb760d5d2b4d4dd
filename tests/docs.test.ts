/**
 * The docs are the contract: README.md and docs/*.md may name only commands, flags, files and
 * exported functions that exist. Each failure names the doc, the line and the missing thing.
 *
 * What is checked, and the rules that keep other projects' names out of it:
 * - Commands: `forge CMD` (also `bun run forge CMD`, `bin/forge.ts CMD`) inside code (inline code
 *   spans and fenced blocks): CMD is one of `forge --help`'s commands. `bun run SCRIPT`: a
 *   package.json script.
 * - Flags: every `--flag` after `forge CMD` in the same code span or code line (up to a shell
 *   `|`, `&&`, `;`), and every flag in a README/docs table row whose first cell is a forge
 *   command (`| \`proxy\` | …`), appears in that command's `--help` (gitops: with its
 *   subcommands'); after `python/build-env.sh` or `python/check-pins.sh`, in that script's
 *   header. Flags of other programs (bwrap, vLLM, pip, …) are never after one of these. And a
 *   fenced block that starts `forge CMD … [--…` is CMD's synopsis: it lists all of its flags.
 * - Paths: any token, in code or prose, whose first segment is a top-level entry of this
 *   repository (`git ls-files`: `proxy/`, `docs/`, `package.json`, …) exists on disk (`*`
 *   globs must match a file). Other projects' paths are left out by two rules: a token inside
 *   a URL, or a path on a line that names another project before it ("veRL's
 *   `tests/...`", "SGLang `python/sglang/...`": OTHER_PROJECTS below) is theirs. Paths
 *   relative to an area (`doors/index.ts` in docs/proxy.md) are not checked.
 * - Exported functions: names imported from an area's face in a doc's code (`import { a } from
 *   "./proxy/index.ts"`), the declarations in the code blocks of a docs/contracts.md section
 *   whose heading names a face ("exported from `proxy/index.ts`"), a name followed by
 *   "exported from `X/index.ts`", and `file.ts` (`a`, `b`) lists: each is exported by that
 *   file (its `export` statements, following `export … from` re-exports).
 */
import { beforeAll, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const ROOT = join(import.meta.dir, "..");
const DOCS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];

/** Projects whose file paths the docs quote; a path after one of these names on its line is theirs. */
const OTHER_PROJECTS = /\b(veRL|verl|vLLM|vllm|SGLang|sglang|Argo|argo-workflows|Kubernetes|Bun|bun's|Codex|codex|Claude Code|OpenClaw|openclaw|opencode|Qwen Code|qwen-code|pi-coding-agent|transformers|TransferQueue|Ray|nginx|Playwright|Hono|DuckDB|Chromium|bubblewrap|hydra|pip|PyTorch|torch|Hugging ?Face|upstream)\b/;

type Doc = { path: string; text: string; lines: string[] };
type Code = { doc: string; line: number; text: string };

const docOf = (path: string, text: string): Doc => ({ path, text, lines: text.split("\n") });
const docs: Doc[] = DOCS.map((path) => docOf(path, readFileSync(join(ROOT, path), "utf8")));

/** Fenced-block lines and inline code spans (which may cross a line break within a paragraph). */
function codeOf(doc: Doc): Code[] {
  const out: Code[] = [];
  let fence: string | undefined;
  const prose = doc.lines.map((line, i) => {
    const marker = /^\s*(```+|~~~+)/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      return "";
    }
    if (fence !== undefined) {
      out.push({ doc: doc.path, line: i + 1, text: line });
      return "";
    }
    return line;
  });
  const joined = prose.join("\n");
  for (const m of joined.matchAll(/(`+)((?:(?!\n\s*\n)[\s\S])*?[^`])\1(?!`)/g)) {
    out.push({ doc: doc.path, line: joined.slice(0, m.index).split("\n").length, text: m[2]!.replace(/\s*\n\s*/g, " ") });
  }
  return out;
}

/** The lines outside fenced blocks, with their numbers. */
function proseLines(doc: Doc): { line: number; text: string }[] {
  let inFence = false;
  const out: { line: number; text: string }[] = [];
  doc.lines.forEach((text, i) => {
    if (/^\s*(```|~~~)/.test(text)) inFence = !inFence;
    else if (!inFence) out.push({ line: i + 1, text });
  });
  return out;
}

// --- what exists --------------------------------------------------------------------------

const run = (argv: string[]) => Bun.spawn(argv, { cwd: ROOT, stdout: "pipe", stderr: "pipe", env: { ...process.env, NO_COLOR: "1" } });
const flagsIn = (text: string) => new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]));

let commands: Map<string, Set<string>>;
const scripts = Object.keys((JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts);
const SCRIPT_FLAGS = new Map(
  ["python/build-env.sh", "python/check-pins.sh"].map((script) => {
    const header = readFileSync(join(ROOT, script), "utf8").split("\n").filter((l) => l.startsWith("#")).join("\n");
    return [script, new Set([...flagsIn(header), "--help"])] as const;
  }),
);

beforeAll(async () => {
  const forge = (args: string[]) => run([process.execPath, join(ROOT, "bin", "forge.ts"), ...args]);
  const top = forge(["--help"]);
  const usage = await new Response(top.stdout).text();
  await top.exited;
  const names = [...usage.matchAll(/^  ([a-z][a-z-]*)\s{2,}/gm)].map((m) => m[1]!);
  expect(names).toContain("run");
  const helps = await Promise.all(
    names.map(async (name) => {
      const p = forge([name, "--help"]);
      const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
      await p.exited;
      let text = out + err;
      // A command with subcommands (gitops): their flags count too.
      const subs = [...text.matchAll(/^  ([a-z][a-z-]*) (?:\[|[A-Z]{2,})/gm)].map((m) => m[1]!);
      for (const sub of subs) {
        const s = forge([name, sub, "--help"]);
        text += (await new Response(s.stdout).text()) + (await new Response(s.stderr).text());
        await s.exited;
      }
      return [name, new Set([...flagsIn(text), "--help"])] as const;
    }),
  );
  commands = new Map(helps);
}, 120_000);

/** The repository's top-level entries (tracked), the first segments a path of ours can have. */
const TOP = new Set(
  Bun.spawnSync(["git", "ls-files"], { cwd: ROOT, stdout: "pipe" })
    .stdout.toString()
    .split("\n")
    .filter(Boolean)
    .map((f) => f.split("/")[0]!),
);

/** A path relative to a task folder (the Harbor layout: `tests/test.sh`, `task.toml`), as some example task has it. */
const inExampleTask = (path: string) => [...new Bun.Glob(`examples/*/tasks/*/${path}`).scanSync({ cwd: ROOT, onlyFiles: false })].length > 0;
/** A task workspace's scripts the docs name as what a harness runs (docs/metrics.md's behaviour metrics), no file of ours. */
const TASK_SCRIPTS = new Set(["tests/run.sh"]);

const exportCache = new Map<string, Set<string>>();
/** The names a TypeScript file exports, following `export * from` / `export { … } from`. */
function exportsOf(file: string, seen = new Set<string>()): Set<string> {
  const cached = exportCache.get(file);
  if (cached) return cached;
  const names = new Set<string>();
  if (seen.has(file) || !existsSync(file)) return names;
  seen.add(file);
  const text = readFileSync(file, "utf8");
  for (const m of text.matchAll(/^export\s+(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|var|class|interface|type|enum|abstract\s+class)\s+([A-Za-z_$][\w$]*)/gm)) names.add(m[1]!);
  for (const m of text.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)) {
    for (const item of m[1]!.split(",")) {
      const name = item.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop()!.trim();
      if (name) names.add(name);
    }
  }
  for (const m of text.matchAll(/^export\s+\*\s+from\s+["']([^"']+)["']/gm)) {
    for (const name of exportsOf(resolve(dirname(file), m[1]!), seen)) names.add(name);
  }
  exportCache.set(file, names);
  return names;
}

const failures = (found: string[]) => expect(found, `\n${found.join("\n")}\n`).toEqual([]);

// --- the checks ---------------------------------------------------------------------------

// Not `kubectl -n forge create`: a namespace named forge.
const COMMAND = /(?:^|[\s(/"'])(?<!-n |--namespace[ =])forge(?:\.ts)?\s+([a-z][a-z-]*)/g;

function commandFailures(docs: Doc[]): string[] {
  const found: string[] = [];
  for (const doc of docs) {
    for (const code of codeOf(doc)) {
      for (const m of code.text.matchAll(COMMAND)) {
        if (!commands.has(m[1]!)) found.push(`${code.doc}:${code.line}: \`forge ${m[1]}\`: no such command (forge --help lists ${[...commands.keys()].join(", ")})`);
      }
      for (const m of code.text.matchAll(/\bbun run ([a-z][\w:-]*)(?=\s|$)/g)) {
        if (!scripts.includes(m[1]!)) found.push(`${code.doc}:${code.line}: \`bun run ${m[1]}\`: package.json has no such script (${scripts.join(", ")})`);
      }
    }
  }
  return [...new Set(found)];
}

function flagFailures(docs: Doc[]): string[] {
  const found: string[] = [];
  for (const doc of docs) {
    for (const code of codeOf(doc)) {
      for (const clause of code.text.split(/\s(?:\||&&|;|\|\|)\s/)) {
        const matches = [...clause.matchAll(COMMAND)].filter((m) => commands.has(m[1]!));
        matches.forEach((m, i) => {
          const rest = clause.slice(m.index! + m[0].length, matches[i + 1]?.index ?? clause.length);
          for (const flag of flagsIn(rest)) {
            if (!commands.get(m[1]!)!.has(flag)) found.push(`${code.doc}:${code.line}: \`forge ${m[1]} … ${flag}\`: \`forge ${m[1]} --help\` has no ${flag}`);
          }
        });
        for (const [script, flags] of SCRIPT_FLAGS) {
          const at = clause.indexOf(script);
          if (at < 0) continue;
          for (const flag of flagsIn(clause.slice(at))) {
            if (!flags.has(flag)) found.push(`${code.doc}:${code.line}: \`${script} ${flag}\`: the script has no ${flag}`);
          }
        }
      }
    }
    // A table row about forge commands: `| \`proxy\` | … (\`--upstream URL\`, …) |`.
    for (const { line, text } of proseLines(doc)) {
      const first = /^\|\s*([^|]+?)\s*\|/.exec(text)?.[1];
      if (!first) continue;
      const names = [...first.matchAll(/`([a-z][a-z-]*)`/g)].map((m) => m[1]!);
      if (names.length === 0 || !names.every((n) => commands.has(n))) continue;
      const known = new Set(names.flatMap((n) => [...commands.get(n)!]));
      for (const flag of flagsIn(text)) {
        if (!known.has(flag)) found.push(`${doc.path}:${line}: ${flag} in the row of \`${names.join("` / `")}\`: not in ${names.map((n) => `forge ${n} --help`).join(" or ")}`);
      }
    }
  }
  return [...new Set(found)];
}

/** A fenced block that starts `forge CMD … [--…` is that command's synopsis: it lists every flag of its --help. */
function synopsisFailures(docs: Doc[]): string[] {
  const found: string[] = [];
  for (const doc of docs) {
    doc.lines.forEach((text, i) => {
      if (!/^\s*(```|~~~)/.test(doc.lines[i - 1] ?? "")) return;
      const m = /^forge ([a-z][a-z-]*) .*\[--/.exec(text);
      if (!m || !commands.has(m[1]!)) return;
      let block = "";
      for (let j = i; j < doc.lines.length && !/^\s*(```|~~~)/.test(doc.lines[j]!); j++) block += `${doc.lines[j]}\n`;
      const listed = flagsIn(block);
      const missing = [...commands.get(m[1]!)!].filter((flag) => flag !== "--help" && !listed.has(flag));
      if (missing.length > 0) found.push(`${doc.path}:${i + 1}: the synopsis of forge ${m[1]} leaves out ${missing.join(", ")} (forge ${m[1]} --help)`);
    });
  }
  return found;
}

function pathFailures(docs: Doc[]): string[] {
  const found: string[] = [];
  const pathToken = /(?<![\w.@/~$-])((?:\.ci|[A-Za-z][\w.-]*)(?:\/[\w.*@-]+)*\/?)/g;
  for (const doc of docs) {
    // Whole lines (prose with its code spans, and fenced lines), so the project a path follows is seen.
    for (const { line, text } of doc.lines.map((text, i) => ({ line: i + 1, text }))) {
      // URLs are other places.
      const plain = text.replace(/\b[a-z][\w+.-]*:\/\/\S+/gi, (url) => " ".repeat(url.length));
      for (const m of plain.matchAll(pathToken)) {
        let path = m[1]!.replace(/[.:]+$/, "");
        const first = path.split("/")[0]!;
        if (!TOP.has(first)) continue;
        if (!path.includes("/") && !/\.\w+$/.test(path)) continue; // `proxy` alone is a word
        if (/\.\.\.|…/.test(text.slice(m.index! + m[1]!.length, m.index! + m[1]!.length + 1))) continue;
        if (OTHER_PROJECTS.test(plain.slice(0, m.index))) continue;
        if (path.includes("*")) {
          if ([...new Bun.Glob(path).scanSync({ cwd: ROOT, onlyFiles: false })].length === 0) found.push(`${doc.path}:${line}: ${path}: matches no file`);
          continue;
        }
        path = path.replace(/\/$/, "");
        if (existsSync(join(ROOT, path)) || inExampleTask(path) || /\/(s|min)$/.test(path) || TASK_SCRIPTS.has(path)) continue;
        found.push(`${doc.path}:${line}: ${path}: no such file or directory`);
      }
    }
  }
  return [...new Set(found)];
}

function exportFailures(docs: Doc[]): string[] {
  const found: string[] = [];
  const check = (doc: string, line: number, name: string, file: string) => {
    if (!exportsOf(join(ROOT, file)).has(name)) found.push(`${doc}:${line}: ${name}: not exported by ${file}`);
  };
  for (const doc of docs) {
    // import { a, b } from "./proxy/index.ts" in a doc's code.
    for (const code of codeOf(doc)) {
      const m = /import\s*\{([^}]*)\}\s*from\s*["'](?:\.\.?\/)*([\w/-]+\.ts)["']/.exec(code.text);
      if (!m || !TOP.has(m[2]!.split("/")[0]!)) continue;
      for (const item of m[1]!.split(",")) {
        const name = item.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0]!.trim();
        if (name) check(code.doc, code.line, name, m[2]!);
      }
    }
    for (const { line, text } of proseLines(doc)) {
      // `name` …, exported from `X/index.ts`
      for (const m of text.matchAll(/`([A-Za-z_]\w*)(?:\([^`]*\))?`[^`]{0,12}exported (?:from|by) `([\w/-]+\.ts)`/g)) check(doc.path, line, m[1]!, m[2]!);
      // `file.ts` (`a`, `b`, `c`)
      for (const m of text.matchAll(/`([\w/-]+\.ts)` \(((?:`[A-Za-z_]\w*`(?:,\s*|\s+and\s+|,\s+and\s+)?)+)\)/g)) {
        if (!TOP.has(m[1]!.split("/")[0]!)) continue;
        for (const n of m[2]!.matchAll(/`([A-Za-z_]\w*)`/g)) check(doc.path, line, n[1]!, m[1]!);
      }
    }
    // docs/contracts.md: a section whose heading names faces (index.ts, or testing.ts for what
    // tests use) declares what they export.
    // Its ```ts blocks, that is: other blocks (shell, YAML) declare nothing.
    let faces: string[] = [];
    let fence: string | undefined;
    doc.lines.forEach((text, i) => {
      if (/^#{1,6}\s/.test(text)) faces = [...text.matchAll(/`([\w/-]+\/(?:index|testing)\.ts)`/g)].map((m) => m[1]!);
      const open = /^\s*```\s*(\w*)/.exec(text);
      if (open) fence = fence === undefined ? open[1]! : undefined;
      else if ((fence === "ts" || fence === "typescript") && faces.length > 0) {
        for (const name of declaredNames(text)) {
          if (!faces.some((face) => exportsOf(join(ROOT, face)).has(name))) found.push(`${doc.path}:${i + 1}: ${name}: not exported by ${faces.join(" or ")}`);
        }
      }
    });
  }
  return [...new Set(found)];
}

/** The names a contracts code line declares: the leading identifier of each top-level item (`a(…): T;  b(…), c`), before any `//` comment. */
function declaredNames(line: string): string[] {
  const code = line.replace(/\/\/.*$/, "");
  const items: string[] = [];
  let depth = 0;
  let item = "";
  for (let i = 0; i < code.length; i++) {
    const c = code[i]!;
    if ("([{<".includes(c)) depth++;
    else if (")]}".includes(c) || (c === ">" && code[i - 1] !== "=")) depth = Math.max(0, depth - 1);
    if (depth === 0 && (c === "," || c === ";")) {
      items.push(item);
      item = "";
    } else item += c;
  }
  items.push(item);
  return items.map((it) => /^\s*([A-Za-z_$][\w$]*)/.exec(it)?.[1]).filter((n): n is string => n !== undefined);
}

// --- the docs ---------------------------------------------------------------------------------

test("every `forge COMMAND` and `bun run SCRIPT` a doc names exists", () => failures(commandFailures(docs)));
test("every flag a doc gives a forge command (or python/build-env.sh) is in that command's --help", () => failures(flagFailures(docs)));
test("a command's synopsis in a doc lists every flag of its --help", () => failures(synopsisFailures(docs)));
test("every repository path a doc names exists", () => failures(pathFailures(docs)));
test("every function a doc says an area exports is exported there", () => failures(exportFailures(docs)));

test("the checks catch a planted mistake of each kind, and leave other projects' names alone", () => {
  const planted = docOf(
    "docs/planted.md",
    [
      "# Planted", // 1
      "Run `bun run forge frobnicate` or `bun run lint`.", // 2
      "`forge run EXPERIMENT --parallelism 2 --no-such-flag` and `bash python/build-env.sh --turbo`.", // 3
      "| `proxy` | the recording proxy (`--upstream URL`, `--upstreem URL`) |", // 4
      "See `docs/no-such-page.md`, docs/also-missing.md and `tests/reference/*.nope.ts`.", // 5
      "`startProxy` (…), exported from `records/index.ts`; `workflows/cli.ts` (`runCommand`, `flyCommand`)", // 6
      "```ts", // 7
      'import { startProxy, noSuchThing } from "./proxy/index.ts";', // 8
      "```", // 9
      "## Proxy (exported from `proxy/index.ts`)", // 10
      "```ts", // 11
      "startProxy(options): Promise<StartedProxy>;  ghostProxy(x), ServedWeights  // a comment naming nothing(", // 12
      "```", // 13
      // What must not be reported: a URL, another project's paths, a namespace named forge.
      "https://github.com/volcengine/verl/blob/main/tests/special_e2e/run.sh; veRL's `tests/special_e2e/x.py`", // 14
      "`kubectl -n forge create secret generic x`, rates of 1,000 records/s, a task's `tests/test.sh`", // 15
      "```", // 16
      "forge run EXPERIMENT [--data DIR] [--json]", // 17
      "```", // 18
    ].join("\n"),
  );
  expect(commandFailures([planted])).toEqual([
    expect.stringMatching(/^docs\/planted\.md:2: `forge frobnicate`: no such command/),
    expect.stringMatching(/^docs\/planted\.md:2: `bun run lint`: package\.json has no such script/),
  ]);
  expect(flagFailures([planted])).toEqual([
    "docs/planted.md:3: `forge run … --no-such-flag`: `forge run --help` has no --no-such-flag",
    "docs/planted.md:3: `python/build-env.sh --turbo`: the script has no --turbo",
    "docs/planted.md:4: --upstreem in the row of `proxy`: not in forge proxy --help",
  ]);
  expect(synopsisFailures([planted])).toEqual([expect.stringMatching(/^docs\/planted\.md:17: the synopsis of forge run leaves out --parallelism, .*--proxy-shards.*--label/)]);
  expect(pathFailures([planted])).toEqual([
    "docs/planted.md:5: docs/no-such-page.md: no such file or directory",
    "docs/planted.md:5: docs/also-missing.md: no such file or directory",
    "docs/planted.md:5: tests/reference/*.nope.ts: matches no file",
  ]);
  expect(exportFailures([planted])).toEqual([
    "docs/planted.md:8: noSuchThing: not exported by proxy/index.ts",
    "docs/planted.md:6: startProxy: not exported by records/index.ts",
    "docs/planted.md:6: flyCommand: not exported by workflows/cli.ts",
    "docs/planted.md:12: ghostProxy: not exported by proxy/index.ts",
  ]);
});
