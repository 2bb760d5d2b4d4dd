/**
 * JavaScriptCore's JIT code as perf sees it. Bun's JSC writes Linux perf's jitdump format
 * (`tools/perf/Documentation/jitdump-specification.txt`: a 40-byte header, then records of
 * `{id, total_size, timestamp}`, JIT_CODE_LOAD = 0 carrying `pid, tid, vma, code_addr,
 * code_size, code_index, name\0, code`) when started with `BUN_JSC_useJITDump=1` and
 * `BUN_JSC_jitDumpDirectory=DIR`. Its files are named `jit-<tid>-<pid>.dump`, which
 * `perf inject -j` does not recognise (it expects `jit-<pid>.dump`), so the code loads are
 * written out as the perf map `/tmp/perf-<pid>.map` instead, which `perf script` and
 * `perf report` read for any process's anonymous executable memory.
 */
import { readFileSync } from "node:fs";

const MAGIC = 0x4a695444; // "JiTD" read little-endian
const JIT_CODE_LOAD = 0;

export interface JitDump {
  pid: number;
  /** Code loads: start address, size, JSC's name ("JSC-FTL: onEvent#ALm4H1", "JSC-Thunk: …"). */
  loads: { addr: bigint; size: bigint; name: string }[];
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
      loads.push({ addr: view.getBigUint64(at + 32, true), size: view.getBigUint64(at + 40, true), name: text.decode(bytes.subarray(nameStart, nameEnd)).replaceAll("\n", " ") });
    }
    at += size;
  }
  return { pid, loads };
}

/**
 * The perf map text (`START SIZE name` per line, hex) for a dump's code loads; a later load at
 * the same address (JSC reuses freed code memory) replaces the earlier one.
 *
 * @example
 * writeFileSync(`/tmp/perf-${dump.pid}.map`, perfMap(dump));
 */
export function perfMap(dump: JitDump): string {
  const byAddr = new Map<bigint, { size: bigint; name: string }>();
  for (const l of dump.loads) byAddr.set(l.addr, l);
  return [...byAddr.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([addr, l]) => `${addr.toString(16)} ${l.size.toString(16)} ${l.name}\n`)
    .join("");
}
