/** CPU time of other processes from /proc/<pid>/stat (utime + stime), for per-call CPU figures. */
import { readFileSync, readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";

const CLK_TCK = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** Fields of a /proc `stat` file (a process's, or a thread's under task/) after the `(comm)` field, which may itself hold spaces. */
function statFields(pid: number, path = `/proc/${pid}/stat`): string[] | null {
  try {
    const text = readFileSync(path, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** utime + stime of stat fields, in seconds: after "(comm)", state(0) ppid(1) …, utime is field 14 of the whole line, i.e. index 11 here. */
const cpuOf = (f: string[]) => (Number(f[11]) + Number(f[12])) / CLK_TCK;

/**
 * CPU seconds (user + system) the process has used so far; 0 once it is gone.
 *
 * @example
 * const before = cpuSeconds(child.pid); … ; const used = cpuSeconds(child.pid) - before;
 */
export function cpuSeconds(pid: number): number {
  const f = statFields(pid);
  return f ? cpuOf(f) : 0;
}

/** Pids whose parent is `pid` (nginx's workers under its master). */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(Number(name));
    if (f && Number(f[1]) === pid) out.push(Number(name));
  }
  return out;
}

/** CPU seconds of a process and all its direct children (nginx master + workers). */
export function treeCpuSeconds(pid: number): number {
  return cpuSeconds(pid) + childPids(pid).reduce((sum, p) => sum + cpuSeconds(p), 0);
}

/**
 * CPU seconds (user + system) of each of the process's threads so far, summed by thread name
 * (`/proc/<pid>/task/<tid>/comm`: "bun" is the main thread, then JSC's "JITWorker" and
 * "HeapHelper", Bun's "HTTP Client", mimalloc's "mi-scavenger", …). A thread that ended between
 * two reads takes its time with it: read it where threads live long (a running proxy's do).
 *
 * @example
 * const before = threadCpuSeconds(pid); … ; threadCpuSeconds(pid).get("bun")! - before.get("bun")!
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    let name: string;
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
    } catch {
      continue; // The thread ended while it was read.
    }
    const f = statFields(pid, `/proc/${pid}/task/${tid}/stat`);
    if (f) out.set(name, (out.get(name) ?? 0) + cpuOf(f));
  }
  return out;
}
