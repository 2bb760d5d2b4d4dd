import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jitResolver, readJitDump } from "./jitdump.ts";
import { chargeSamples, jsFunction, nameJitFrames, parsePerfScript, samplesCalling, samplesInside } from "./perf-samples.ts";

/** A jitdump as perf's jitdump-specification.txt lays it out: header, then JIT_CODE_LOAD records. */
function jitdumpBytes(pid: number, loads: { addr: bigint; size: bigint; name: string; time: bigint }[], cutLast = false): Uint8Array {
  const parts: Uint8Array[] = [];
  const header = new DataView(new ArrayBuffer(40));
  header.setUint32(0, 0x4a695444, true);
  header.setUint32(4, 1, true);
  header.setUint32(8, 40, true);
  header.setUint32(12, 62, true);
  header.setUint32(20, pid, true);
  parts.push(new Uint8Array(header.buffer));
  for (const l of loads) {
    const name = new TextEncoder().encode(`${l.name}\0`);
    const code = new Uint8Array(Number(l.size));
    const rec = new DataView(new ArrayBuffer(56 + name.length + code.length));
    rec.setUint32(0, 0, true);
    rec.setUint32(4, rec.byteLength, true);
    rec.setBigUint64(8, l.time, true);
    rec.setUint32(16, pid, true);
    rec.setUint32(20, pid + 2, true);
    rec.setBigUint64(24, l.addr, true);
    rec.setBigUint64(32, l.addr, true);
    rec.setBigUint64(40, l.size, true);
    const bytes = new Uint8Array(rec.buffer);
    bytes.set(name, 56);
    parts.push(bytes);
  }
  let total = parts.reduce((n, p) => n + p.byteLength, 0);
  if (cutLast) total -= 10;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p.subarray(0, Math.min(p.byteLength, total - at)), at);
    at += p.byteLength;
  }
  return out;
}

describe("readJitDump / jitResolver", () => {
  test("reads JSC's code loads; an address is named by the latest load covering it at the sample's time; a cut last record is left out", () => {
    const dir = mkdtempSync(join(tmpdir(), "jitdump-"));
    const path = join(dir, "jit-12-10.dump");
    const loads = [
      { addr: 0x7f0000001000n, size: 0x80n, name: "JSC-DFG: onEvent#ALm4H1", time: 1_000_000_000n },
      { addr: 0x7f0000000000n, size: 0x40n, name: "JSC-Thunk: CallTrampoline", time: 1_000_000_000n },
      // JSC freed onEvent's DFG code and put another function there.
      { addr: 0x7f0000001000n, size: 0x90n, name: "JSC-FTL: planCall#AmKjgo", time: 5_000_000_000n },
      { addr: 0x7f0000002000n, size: 0x10n, name: "JSC-FTL: cut#AAAAAA", time: 6_000_000_000n },
    ];
    writeFileSync(path, jitdumpBytes(10, loads, true));
    const dump = readJitDump(path);
    expect(dump.pid).toBe(10);
    expect(dump.loads.map((l) => l.name)).toEqual(loads.slice(0, 3).map((l) => l.name));
    const name = jitResolver(dump.loads);
    expect(name(0x7f0000001010, 2)).toBe("JSC-DFG: onEvent#ALm4H1");
    expect(name(0x7f0000001010, 5.5)).toBe("JSC-FTL: planCall#AmKjgo");
    // Past the DFG code's end, inside the FTL code's: only the later load covers it.
    expect(name(0x7f0000001085, 2)).toBeUndefined();
    expect(name(0x7f0000001085, 5.5)).toBe("JSC-FTL: planCall#AmKjgo");
    expect(name(0x7f0000000010, 0.5)).toBeUndefined();
    expect(name(0x7f0000000010, 9)).toBe("JSC-Thunk: CallTrampoline");
  });

  test("a file that is no jitdump is refused, naming how to make one", () => {
    const dir = mkdtempSync(join(tmpdir(), "jitdump-"));
    writeFileSync(join(dir, "x.dump"), "not a dump at all, but long enough for a header....");
    expect(() => readJitDump(join(dir, "x.dump"))).toThrow(/BUN_JSC_useJITDump=1/);
  });
});

describe("parsePerfScript / chargeSamples", () => {
  const script = [
    "bun 10 100.000001: ",
    "\t1c08d4c [unknown] (/usr/lib/node_modules/bun/bin/bun.exe)",
    "\t7f0000000010 JSC-Thunk: CallTrampoline ([JIT] tid 10)",
    "\t7f0000001010 JSC-FTL: onEvent#ALm4H1 ([JIT] tid 10)",
    "\t7f0000003010 JSC-FTL: #ANONYM ([JIT] tid 10)",
    "\t7f0000002010 JSC-FTL: read#Bd1iC7 ([JIT] tid 10)",
    "",
    "bun 10 100.001002: ",
    "\t7f0000001020 [unknown] ([JIT] tid 10)",
    "\t7f0000002010 JSC-DFG: read#Bd1iC7 (/tmp/perf-10.map)",
    "",
    "HTTP Client 11 100.002003: ",
    "\tffffffff815a71fb do_syscall_64 ([kernel.kallsyms])",
    "",
    "bun 10 100.003004: ",
    "\tffffffff815a71fb clear_page_erms ([kernel.kallsyms])",
    "\t631601f [unknown] (/usr/lib/node_modules/bun/bin/bun.exe)",
    "",
  ].join("\n");

  test("reads each sample's thread (names with spaces), time and frames, leaf first", () => {
    const samples = parsePerfScript(script);
    expect(samples.map((s) => s.comm)).toEqual(["bun", "bun", "HTTP Client", "bun"]);
    expect(samples[0]!.time).toBeCloseTo(100.000001, 6);
    expect(samples[0]!.frames[0]).toEqual(["0x1c08d4c", "/usr/lib/node_modules/bun/bin/bun.exe"]);
    expect(samples[0]!.frames[2]).toEqual(["JSC-FTL: onEvent#ALm4H1", "[JIT] tid 10"]);
  });

  test("JSC's machinery and anonymous functions are looked through; tiers of one function are one name", () => {
    expect(jsFunction(["JSC-Thunk: CallTrampoline", ""])).toBeUndefined();
    expect(jsFunction(["JSC-LLIntThunk: arityFixup", ""])).toBeUndefined();
    expect(jsFunction(["JSC-InlineCache: PutById Transition handler", ""])).toBeUndefined();
    expect(jsFunction(["JSC-FTL: #ANONYM", ""])).toBeUndefined();
    expect(jsFunction(["0x1c08d4c", "bun.exe"])).toBeUndefined();
    expect(jsFunction(["JSC-DFG: read#Bd1iC7", ""])).toBe("read#Bd1iC7");
    expect(jsFunction(["JSC-Baseline: read#Bd1iC7", ""])).toBe("read#Bd1iC7");
  });

  test("charges native work to the JS function that called it, and every function on the stack once", () => {
    const samples = parsePerfScript(script);
    expect(samples[1]!.frames[0]).toEqual(["0x7f0000001020", "[JIT] tid 10"]);
    nameJitFrames(samples, (addr) => (addr === 0x7f0000001020 ? "JSC-FTL: onEvent#ALm4H1" : undefined));
    const main = chargeSamples(samples.filter((s) => s.comm === "bun"));
    expect(main.samples).toBe(3);
    expect(Object.fromEntries(main.innermost)).toEqual({ "onEvent#ALm4H1": 2, "(no JS frame)": 1 });
    expect(Object.fromEntries(main.inclusive)).toEqual({ "onEvent#ALm4H1": 2, "read#Bd1iC7": 2 });
    expect(Object.fromEntries(main.leaves)).toEqual({ "bun native": 1, JIT: 1, kernel: 1 });
  });

  test("a function's samples by what ran inside it, and by who called it", () => {
    const samples = parsePerfScript(script);
    nameJitFrames(samples, (addr) => (addr === 0x7f0000001020 ? "JSC-FTL: onEvent#ALm4H1" : undefined));
    const main = samples.filter((s) => s.comm === "bun");
    expect(Object.fromEntries(samplesInside(main, "read#Bd1iC7"))).toEqual({ "onEvent#ALm4H1": 2 });
    expect(Object.fromEntries(samplesInside(main, "onEvent#ALm4H1"))).toEqual({ "(own code and native)": 2 });
    expect(Object.fromEntries(samplesCalling(main, "onEvent#ALm4H1"))).toEqual({ "read#Bd1iC7": 2 });
    expect(Object.fromEntries(samplesCalling(main, "read#Bd1iC7"))).toEqual({ "(no JS caller)": 2 });
  });
});
