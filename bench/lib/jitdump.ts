/**
 * JavaScriptCore's JIT code as perf sees it. Bun's JSC writes Linux perf's jitdump format
 * (`tools/perf/Documentation/jitdump-specification.txt`: a 40-byte header, then records of
 * `{id, total_size, timestamp}`, JIT_CODE_LOAD = 0 carrying `pid, tid, vma, code_addr,
 * code_size, code_index, name\0, code`) when started with `BUN_JSC_useJITDump=1` and
 * `BUN_JSC_jitDumpDirectory=DIR`. Its files are named `jit-<tid>-<pid>.dump`, which
 * `perf inject -j` does not recognise (it expects `jit-<pid>.dump`), so samples are named here
 * (`jitResolver`): JSC frees code and reuses its memory for other functions, so an address is
 * named by the latest code load at or before the sample's time (both on CLOCK_MONOTONIC with
 * `perf record -k 1`), not by a static perf map.
 */
import { readFileSync } from "node:fs";

const MAGIC = 0x4a695444; // "JiTD" read little-endian
const JIT_CODE_LOAD = 0;

export interface JitDump {
  pid: number;
  /** Code loads: start address, size, JSC's name ("JSC-FTL: onEvent#ALm4H1", "JSC-Thunk: …"), when (ns, CLOCK_MONOTONIC). */
  loads: { addr: bigint; size: bigint; name: string; time: bigint }[];
}

/**
 * Reads one jitdump file.
 *
 * @example
 * const dump = readJitDump("/tmp/jit/jit-4242-4240.dump"); dump.pid // 4240
 */
export function readJitDump(path: string): JitDump {
  const bytes = readFileSync(path);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 40 || view.getUint32(0, true) !== MAGIC) throw new Error(`${path}: not a jitdump file (no "JiTD" header); start bun with BUN_JSC_useJITDump=1 BUN_JSC_jitDumpDirectory=DIR`);
  const headerSize = view.getUint32(8, true);
  const pid = view.getUint32(20, true);
  const loads: JitDump["loads"] = [];
  const text = new TextDecoder();
  for (let at = headerSize; at + 16 <= bytes.byteLength; ) {
    const id = view.getUint32(at, true);
    const size = view.getUint32(at + 4, true);
    // A record cut by the process's end (the file is written as code is compiled).
    if (size < 16 || at + size > bytes.byteLength) break;
    if (id === JIT_CODE_LOAD) {
      const nameStart = at + 56;
      const nameEnd = bytes.indexOf(0, nameStart);
      loads.push({ addr: view.getBigUint64(at + 32, true), size: view.getBigUint64(at + 40, true), name: text.decode(bytes.subarray(nameStart, nameEnd)).replaceAll("\n", " "), time: view.getBigUint64(at + 8, true) });
    }
    at += size;
  }
  return { pid, loads };
}

/**
 * Names JIT code addresses at a time: the latest load covering the address that happened at or
 * before it; undefined for an address no load covers then.
 *
 * @example
 * const name = jitResolver(readJitDump(path).loads)(0x7f0000001010, 20451.4676); // "JSC-FTL: onEvent#ALm4H1"
 */
export function jitResolver(loads: readonly JitDump["loads"][number][]): (addr: number, seconds: number) => string | undefined {
  const sorted = [...loads].sort((a, b) => (a.addr < b.addr ? -1 : a.addr > b.addr ? 1 : 0));
  const starts = sorted.map((l) => Number(l.addr));
  const ends = sorted.map((l) => Number(l.addr + l.size));
  const times = sorted.map((l) => Number(l.time) / 1e9);
  const widest = Math.max(0, ...sorted.map((l) => Number(l.size)));
  return (addr, seconds) => {
    // The last load starting at or below addr, then back over every one that could still cover it.
    let lo = 0;
    let hi = starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! <= addr) lo = mid + 1;
      else hi = mid - 1;
    }
    let best = -1;
    for (let i = hi; i >= 0 && starts[i]! > addr - widest - 1; i--) {
      if (addr < ends[i]! && times[i]! <= seconds && (best < 0 || times[i]! > times[best]!)) best = i;
    }
    return best < 0 ? undefined : sorted[best]!.name;
  };
}
