/**
 * The dependency rules of docs/architecture.md, checked on the source: a static scan of every
 * import in the project's TypeScript files. It fails naming the file, the import and the rule.
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { AREAS, FACED_AREAS, areaOf, faceProblems, faceUses, importsOf, isFaceFor, isTestFile, moduleExports, projectFiles, type Area } from "./architecture.ts";
import { functionsOf } from "./function-lengths.ts";

const ROOT = join(import.meta.dir, "..");

test("every area imports another area only through its public face, and only the areas it may depend on", () => {
  const problems: string[] = [];
  let scanned = 0;
  for (const file of projectFiles(ROOT)) {
    const from = areaOf(file);
    // tests/ and bench/ are no areas: they may reach any file they test or time.
    if (!from || from === "tests" || from === "bench") continue;
    scanned++;
    for (const spec of importsOf(join(ROOT, file))) {
      if (!spec.startsWith(".")) continue;
      const target = normalize(relative(ROOT, join(ROOT, dirname(file), spec)));
      const to = areaOf(target);
      if (!to || to === from) continue;
      if (!isFaceFor(file, target)) {
        problems.push(`${file}: imports "${spec}", an internal file of ${to}/ (import ${to}/index.ts instead, or export what is needed from it)`);
      }
      const rule = AREAS[from];
      // Test code (unit tests, testing.ts helpers) may start any area through its faces.
      if (!isTestFile(file) && rule.dependsOn !== "*" && !rule.dependsOn.includes(to)) {
        problems.push(`${file}: imports ${to}/, but ${from}/ may depend only on ${rule.dependsOn.join(", ") || "nothing"} (docs/architecture.md)`);
      }
    }
  }
  expect(scanned).toBeGreaterThan(200);
  expect(problems).toEqual([]);
});

test("the scan sees static, dynamic and re-export imports", () => {
  const text = `import { a } from "./a.ts";\nimport type { B } from "../b/index.ts";\nexport * from "./c.ts";\nconst d = await import("../d/index.ts");\n// import { e } from "./e.ts" in a comment is ignored`;
  expect(importsOf(text, true)).toEqual(["./a.ts", "../b/index.ts", "./c.ts", "../d/index.ts"]);
});

test("the rules name every top-level area of the source", () => {
  const areas = new Set<string>();
  for (const file of projectFiles(ROOT)) {
    const top = file.split("/")[0]!;
    if (file.includes("/")) areas.add(top);
  }
  for (const area of areas) expect(Object.keys(AREAS).concat(["tests", "bench", "examples"])).toContain(area);
});

test("docs/architecture.md's table of areas says what the rules say", () => {
  const page = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
  const rows = new Map<string, string[]>();
  for (const m of page.matchAll(/^\| `([a-z]+)\/` \| [^|]+ \| ([^|]+) \|$/gm)) {
    const cell = m[2]!.trim();
    rows.set(m[1]!, cell === "—" ? [] : cell === "any" ? ["*"] : cell.split(",").map((s) => s.trim()));
  }
  for (const [area, rule] of Object.entries(AREAS)) {
    if (area === "tests" || area === "bench") continue;
    expect({ area, mayImport: rows.get(area) }).toEqual({ area, mayImport: rule.dependsOn === "*" ? ["*"] : rule.dependsOn });
  }
});

/** Every project file's text, and docs' pages (their code samples import faces as users would). */
function projectTexts(): Map<string, string> {
  const texts = new Map<string, string>();
  for (const file of projectFiles(ROOT)) texts.set(file, readFileSync(join(ROOT, file), "utf8"));
  for (const page of ["README.md", ...new Bun.Glob("docs/*.md").scanSync({ cwd: ROOT })]) texts.set(page, readFileSync(join(ROOT, page), "utf8"));
  return texts;
}

test("every name a face (index.ts) exports is imported by another area's source; names only tests use are in testing.ts", () => {
  const exports = new Map(FACED_AREAS.map((area) => [area, moduleExports(join(ROOT, area, "index.ts"))] as const));
  expect([...exports.values()].reduce((n, names) => n + names.size, 0)).toBeGreaterThan(100);
  expect(faceProblems(exports, faceUses(projectTexts()))).toEqual([]);
});

test("the faces check sees each way a face is used, and names an export only tests use, or nobody", () => {
  const texts = new Map([
    ["proxy/a.ts", `import { named, type Typed, orig as alias } from "../records/index.ts";\nexport { reexported } from "../records/index.ts";\nimport * as rec from "../records/index.ts";\nrec.viaNamespace();`],
    ["workflows/b.ts", `const { dynamic } = await import("../records/index.ts");\nconst [{ inAll }, { other }] = await Promise.all([import("../records/index.ts"), import("../lib/index.ts")]);\nlet t: import("../records/index.ts").AsType;`],
    ["docs/records.md", 'import { documented } from "./records/index.ts";'],
    ["records/c.ts", `import { ownArea } from "./index.ts";`],
    ["tests/d.test.ts", `import { testOnly } from "../records/index.ts";`],
    ["proxy/e.ts", `// import { inComment } from "../records/index.ts";`],
  ]);
  const uses = faceUses(texts);
  expect(uses.filter((u) => u.area === "records").map((u) => u.name).sort()).toEqual(["AsType", "documented", "dynamic", "inAll", "named", "orig", "reexported", "testOnly", "Typed", "viaNamespace"].sort());
  expect(uses.find((u) => u.name === "other")).toEqual({ area: "lib", name: "other", file: "workflows/b.ts" });
  const exports = new Map<Area, Set<string>>([["records", new Set(["named", "testOnly", "ownArea", "inComment"])]]);
  expect(faceProblems(exports, uses)).toEqual([
    "records/index.ts exports inComment, which no file outside records/ imports: remove it from the face (files inside records/ import it from its own module)",
    "records/index.ts exports ownArea, which no file outside records/ imports: remove it from the face (files inside records/ import it from its own module)",
    "records/index.ts exports testOnly, which outside records/ only test code imports (tests/d.test.ts): export it from records/testing.ts and import it from there (bench/ imports the module itself)",
  ]);
});

const MAX_FUNCTION_LINES = 100;

test(`no function in the source is over ${MAX_FUNCTION_LINES} lines (a state machine is a class, each concern a named function)`, () => {
  const problems: string[] = [];
  let measured = 0;
  for (const file of projectFiles(ROOT)) {
    // Unit and integration tests and benchmarks are not measured; generated code is not in projectFiles.
    if (/\.test\.ts$/.test(file) || file.startsWith("tests/") || file.startsWith("bench/")) continue;
    for (const fn of functionsOf(readFileSync(join(ROOT, file), "utf8"))) {
      measured++;
      if (fn.lines <= MAX_FUNCTION_LINES) continue;
      problems.push(`${file}:${fn.line}: ${fn.name} is ${fn.lines} lines (at most ${MAX_FUNCTION_LINES}): split it into named functions with one concern each, or a class for a state machine`);
    }
  }
  expect(measured).toBeGreaterThan(1000);
  expect(problems).toEqual([]);
});

test("the function scan sees declarations, methods, arrows and function expressions, and no braces in strings, templates, comments or regexes", () => {
  const text = [
    "export async function a(x: number): Promise<{ y: string }> {", // 1
    "  const s = \"}\"; const t = `${x}}${`{`}`; // }", // 2
    "  const r = /[}]\\/{/g; /* { */", // 3
    "  if (x) {", // 4
    "    return x / 2 / 1;", // 5
    "  }", // 6
    "}", // 7
    "const b = async (y: string): Promise<void> => {", // 8
    "  items.map((z) =>", // 9
    "    z + 1);", // 10
    "};", // 11
    "class C {", // 12
    "  constructor(private n: number) {}", // 13
    "  get m(): number[] {", // 14
    "    return [function* () {", // 15
    "      yield 1;", // 16
    "    }];", // 17
    "  }", // 18
    "}", // 19
    "type F = (p: number) => { q: number };", // 20
    "const c = cond ? (v: number): string => `${v}` : () => {", // 21
    "  return '';", // 22
    "};", // 23
  ].join("\n");
  const long = `function big() {\n${"  step();\n".repeat(99)}}\n`;
  expect(functionsOf(long)).toEqual([{ name: "big", line: 1, lines: 101 }]);
  expect(functionsOf(text)).toEqual([
    { name: "a", line: 1, lines: 7 },
    { name: "b", line: 8, lines: 4 },
    { name: "(callback to map)", line: 9, lines: 2 },
    { name: "constructor", line: 13, lines: 1 },
    { name: "m", line: 14, lines: 5 },
    { name: "(anonymous)", line: 15, lines: 3 },
    { name: "c", line: 21, lines: 1 },
    { name: "c", line: 21, lines: 3 },
  ]);
});
