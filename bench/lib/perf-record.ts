/**
 * A proxy run under Linux `perf record` with JavaScriptCore's jitdump on, so that every sample
 * can be named by the JS function it is in or under (bench/perf-report.ts). `bun --cpu-prof`
 * cannot rank the proxy's stages on the 2-core machines the benches run on (it put engine
 * mode's time in `readdirSync`), and perf alone sees Bun's native code and JIT code without
 * names: with the call graph (`-g`, JSC's frames keep their frame pointers) and the jitdump's
 * names, the native work (JSON.parse, GC, strings) is charged to the JS function that asked for it.
 */
import { childPids } from "./proc-cpu.ts";

export interface PerfRecording {
  /** perf's output file. */
  data: string;
  /** Where JSC writes its jitdump (`jit-<tid>-<pid>.dump`). */
  jitDir: string;
  /** Samples per second (default 999). */
  frequency?: number;
}

/** `perf record` with the monotonic clock the jitdump's timestamps use, the call graph and the CPU clock (no hardware counters needed). */
export function perfRecordArgs(p: PerfRecording): string[] {
  return ["record", "-k", "1", "-g", "-e", "cpu-clock", "-F", String(p.frequency ?? 999), "-o", p.data];
}

/** The JSC options that write the jitdump. */
export function perfEnv(p: PerfRecording): Record<string, string> {
  return { BUN_JSC_useJITDump: "1", BUN_JSC_jitDumpDirectory: p.jitDir };
}

/**
 * The pid of the process perf runs (its one child).
 *
 * @example
 * const proxyPid = perfWorkload(perfChild.pid!);
 */
export function perfWorkload(perfPid: number): number {
  const children = childPids(perfPid);
  if (children.length !== 1) throw new Error(`perf record (pid ${perfPid}) has ${children.length} child processes, expected its one workload`);
  return children[0]!;
}
