/**
 * The progress line on stderr: done / running / failed and the pass rate so far. On a TTY it
 * redraws one line; otherwise it prints a line at most every few seconds (CI logs stay short).
 */
export type ProgressState = { total: number; done: number; running: number; passed: number; failed: number; timedOut: number; infra: number };

/**
 * @example
 * formatProgress({ total: 20, done: 5, running: 4, passed: 3, failed: 1, timedOut: 0, infra: 0 }, 12_000);
 * // "[######------------------]  5/20 done, 4 running, 1 failed, 0 timeout, 0 infra · pass 60.0% · 12s"
 */
export function formatProgress(state: ProgressState, elapsedMs: number): string {
  const width = 24;
  const filled = state.total ? Math.round((state.done / state.total) * width) : width;
  const rate = state.done - state.infra > 0 ? `${((state.passed / (state.done - state.infra)) * 100).toFixed(1)}%` : "-";
  const pad = String(state.total).length;
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(state.done).padStart(pad)}/${state.total} done, ${state.running} running, ${state.failed} failed, ${state.timedOut} timeout, ${state.infra} infra · pass ${rate} · ${Math.round(elapsedMs / 1000)}s`;
}

/**
 * @example
 * const bar = progressReporter(process.stderr);
 * bar.update(state); bar.end(state);
 */
export function progressReporter(stream: { write(text: string): unknown; isTTY?: boolean }, options: { quiet?: boolean } = {}) {
  const started = performance.now();
  let lastPrinted = 0;
  const tty = Boolean(stream.isTTY);
  return {
    update(state: ProgressState) {
      if (options.quiet) return;
      const now = performance.now();
      if (tty) stream.write(`\r\x1b[2K${formatProgress(state, now - started)}`);
      else if (now - lastPrinted > 5000 && state.done < state.total) {
        lastPrinted = now;
        stream.write(`${formatProgress(state, now - started)}\n`);
      }
    },
    end(state: ProgressState) {
      if (options.quiet) return;
      const line = formatProgress(state, performance.now() - started);
      stream.write(tty ? `\r\x1b[2K${line}\n` : `${line}\n`);
    },
  };
}
