/**
 * Preloaded into a measured process (`bun --preload bench/lib/gc-on-signal.ts …`): on SIGUSR2 it
 * runs a full garbage collection and writes its memory figures as JSON to $FORGE_BENCH_MEMORY_FILE,
 * so that a benchmark reads live memory rather than garbage not yet collected.
 */
import { writeFileSync } from "node:fs";
import { heapStats } from "bun:jsc";

const file = process.env.FORGE_BENCH_MEMORY_FILE;
if (file) {
  process.on("SIGUSR2", () => {
    Bun.gc(true);
    const m = process.memoryUsage();
    writeFileSync(file, JSON.stringify({ rss: m.rss, heapSize: heapStats().heapSize, external: m.external, arrayBuffers: m.arrayBuffers, at: Date.now() }));
  });
}
