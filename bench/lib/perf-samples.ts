/**
 * `perf script -F comm,tid,time,ip,sym,dso` output read as samples, and each sample charged to
 * JavaScript functions: the innermost one on its stack (its own code and the native code it
 * called: JSON.parse, string and typed-array work, a collection it triggered) and every one
 * on its stack (inclusive). JIT frames are named from JSC's jitdump (`nameJitFrames` with
 * jitdump.ts's `jitResolver`) as `JSC-<tier>: <name>#<hash>`; the hash tells apart functions
 * of one name, and is the same in two processes running the same source.
 */

export interface Sample {
  comm: string;
  time: number;
  /** Leaf first: [symbol or address, object]. */
  frames: [string, string][];
}

/** perf's name for anonymous executable memory (JIT code): `[JIT] tid N`, or `/tmp/perf-<pid>.map`. */
const JIT_OBJECT = /^\[JIT\]|\/perf-\d+\.map$/;

/**
 * Frames that are JSC's machinery (thunks, inline caches, trampolines), and anonymous
 * functions (`JSC-FTL: #ARApY9`, a callback): they are looked through, their samples charged
 * to the named function under them.
 */
const MACHINERY = /^JSC-(?:[A-Za-z]*Thunk|InlineCache)|CallTrampoline|^JSC-[A-Za-z]+: #/;

/**
 * Samples in `perf script` text.
 *
 * @example
 * const samples = parsePerfScript(spawnSync("perf", ["script", "-i", data, "-F", "comm,tid,time,ip,sym,dso"]).stdout);
 */
export function parsePerfScript(text: string): Sample[] {
  const samples: Sample[] = [];
  let current: Sample | undefined;
  for (const line of text.split("\n")) {
    if (line.trim() === "") {
      current = undefined;
      continue;
    }
    if (line[0] !== "\t" && line[0] !== " ") {
      // "comm tid time:" (comm may hold spaces: "HTTP Client")
      const m = /^(.*?)\s+\d+\s+([\d.]+):\s*$/.exec(line);
      if (!m) continue;
      current = { comm: m[1]!, time: Number(m[2]), frames: [] };
      samples.push(current);
      continue;
    }
    const m = /^\s*([0-9a-f]+)\s+(.*)\s+\((.*)\)\s*$/.exec(line);
    if (m && current) current.frames.push([m[2] === "[unknown]" ? `0x${m[1]}` : m[2]!, m[3]!]);
  }
  return samples;
}

/**
 * Names each sample's JIT frames (perf writes them as an address in `[JIT] tid N` or
 * `/tmp/perf-<pid>.map`) with `resolve` (jitdump.ts's `jitResolver`) at the sample's time; a
 * frame no load covers stays an address.
 *
 * @example
 * nameJitFrames(samples, jitResolver(readJitDump(path).loads));
 */
export function nameJitFrames(samples: Sample[], resolve: (addr: number, seconds: number) => string | undefined): void {
  for (const s of samples) {
    for (const f of s.frames) {
      if (!JIT_OBJECT.test(f[1]) || !f[0].startsWith("0x")) continue;
      const name = resolve(Number.parseInt(f[0].slice(2), 16), s.time);
      if (name !== undefined) f[0] = name;
    }
  }
}

/** The function a JSC frame names ("onEvent#ALm4H1"), or undefined for native code and JSC's machinery. */
export function jsFunction(frame: [string, string]): string | undefined {
  const sym = frame[0];
  if (!sym.startsWith("JSC-") || MACHINERY.test(sym)) return undefined;
  const name = sym.replace(/^JSC-[A-Za-z]+:\s*/, "");
  return name === "" ? undefined : name;
}

/** What a sample's leaf is: Bun's native code, JIT code, the kernel, or another library. */
export function leafKind(s: Sample): string {
  const leaf = s.frames[0];
  if (!leaf) return "none";
  if (leaf[1].includes("kernel")) return "kernel";
  if (leaf[0].startsWith("JSC-") || JIT_OBJECT.test(leaf[1])) return "JIT";
  if (leaf[1].endsWith("bun.exe") || leaf[1].endsWith("/bun")) return "bun native";
  return leaf[1].split("/").pop()!;
}

/** Adds `n` to `key`'s count in `counts`. */
export function tally(counts: Map<string, number>, key: string, n = 1): void {
  counts.set(key, (counts.get(key) ?? 0) + n);
}

export interface Charges {
  samples: number;
  /** By the innermost JS function (own code and the native code under it); "(no JS frame)" for the rest. */
  innermost: Map<string, number>;
  /** By every JS function on the stack, once per sample. */
  inclusive: Map<string, number>;
  /** By leafKind. */
  leaves: Map<string, number>;
}

/**
 * The samples charged to JS functions.
 *
 * @example
 * const main = chargeSamples(samples.filter((s) => s.comm === "bun"));
 */
export function chargeSamples(samples: readonly Sample[]): Charges {
  const out: Charges = { samples: samples.length, innermost: new Map(), inclusive: new Map(), leaves: new Map() };
  for (const s of samples) {
    tally(out.leaves, leafKind(s));
    const names = new Set<string>();
    let innermost: string | undefined;
    for (const f of s.frames) {
      const name = jsFunction(f);
      if (name === undefined) continue;
      innermost ??= name;
      names.add(name);
    }
    tally(out.innermost, innermost ?? "(no JS frame)");
    for (const n of names) tally(out.inclusive, n);
  }
  return out;
}

/**
 * The samples that have `fn` on their stack, by the JS function directly inside it ("(own code
 * and native)" where `fn` is the innermost): where a function's inclusive samples go.
 *
 * @example
 * samplesInside(main, "record#D4BVym") // Map { "append#B42O4T" => 433, "store#CHIgVp" => 243, … }
 */
export function samplesInside(samples: readonly Sample[], fn: string): Map<string, number> {
  return samplesAround(samples, fn, "inside");
}

/**
 * The samples that have `fn` on their stack, by the JS functions that called it (up to three,
 * innermost first, "<" between them; "(no JS caller)" where none did): who a function's samples
 * come from.
 *
 * @example
 * samplesCalling(main, "commonPrefix#ECbaBb") // Map { "promptDelta#… < recordModelCall#… < finish#…" => 87, … }
 */
export function samplesCalling(samples: readonly Sample[], fn: string): Map<string, number> {
  return samplesAround(samples, fn, "callers");
}

function samplesAround(samples: readonly Sample[], fn: string, side: "inside" | "callers"): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    let inner: string | undefined;
    let found = false;
    const callers: string[] = [];
    for (const f of s.frames) {
      const name = jsFunction(f);
      if (name === undefined) continue;
      if (found) {
        callers.push(name);
        if (callers.length === 3) break;
      } else if (name === fn) {
        found = true;
        if (side === "inside") break;
      } else inner = name;
    }
    if (!found) continue;
    if (side === "inside") tally(out, inner ?? "(own code and native)");
    else tally(out, callers.length > 0 ? callers.join(" < ") : "(no JS caller)");
  }
  return out;
}
