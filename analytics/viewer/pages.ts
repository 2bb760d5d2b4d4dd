/**
 * Writes the viewer pages of many rollouts in one pass over the log: each rollout's records are
 * collected (trajectories/collectRollouts), assembled (assembleTrajectory) and rendered.
 */
import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Record } from "../../schemas/index.ts";
import { assembleTrajectory, collectRollouts, withThinkDefaults, type RolloutTrajectory } from "../../trajectories/index.ts";
import { renderRolloutPage } from "./page.ts";
import { tokenTexter } from "./token-text.ts";

export type PageSummary = { file: string; samples: number; forks: number; realigns: number; broken: number; drift_tokens: number; trajectory_error?: string };

export type PageOptions = {
  /** `auto` (Qwen3's vocabulary for Qwen3 models), `qwen3`, or `ids`. */
  tokenizer?: "auto" | "qwen3" | "ids";
  /** The report page, relative to the pages' directory. */
  reportHref?: string;
};

/**
 * A file name for a rollout id: the id when it is plain, else a cleaned id with a hash (two ids
 * never share a page).
 *
 * @example
 * pageName("q-1.i0.hello.0") // "q-1.i0.hello.0.html"
 */
export function pageName(rolloutId: string): string {
  const clean = rolloutId.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120);
  if (clean === rolloutId && !clean.startsWith(".")) return `${clean}.html`;
  return `${clean}-${createHash("sha256").update(rolloutId).digest("hex").slice(0, 10)}.html`;
}

/**
 * Renders a page for each rollout in `ids` found in `records` into `dir`; returns what each page
 * showed about the trajectory (samples, forks, drift), by rollout id.
 *
 * @example
 * const pages = await writeRolloutPages(readRecords("data"), new Set(["q-1.i0.hello.0"]), "report.rollouts");
 */
export async function writeRolloutPages(
  records: AsyncIterable<Record | { record: Record }> | Iterable<Record | { record: Record }>,
  ids: ReadonlySet<string>,
  dir: string,
  options: PageOptions = {},
): Promise<Map<string, PageSummary>> {
  await mkdir(dir, { recursive: true });
  const written = new Map<string, PageSummary>();
  async function* only() {
    for await (const item of records as AsyncIterable<Record | { record: Record }>) {
      const record = "kind" in item ? item : item.record;
      const value = record.kind.value as { rolloutId?: string } | undefined;
      if (value?.rolloutId !== undefined && ids.has(value.rolloutId)) yield record;
    }
  }
  for await (const collected of collectRollouts(only())) {
    const calls = collected.calls.map((c) => c.call).sort((a, b) => a.seq - b.seq);
    let trajectory: RolloutTrajectory | undefined;
    let trajectoryError: string | undefined;
    try {
      trajectory = assembleTrajectory(collected.calls, collected.rollout, collected.result, withThinkDefaults({}));
    } catch (error) {
      trajectoryError = (error as Error).message;
    }
    const text = await tokenTexter(calls[0]?.model ?? "", options.tokenizer ?? "auto");
    const file = pageName(collected.rolloutId);
    await writeFile(
      join(dir, file),
      renderRolloutPage({ rolloutId: collected.rolloutId, rollout: collected.rollout, result: collected.result, calls, content: collected.content, trajectory, trajectoryError, text, reportHref: options.reportHref }),
    );
    const stats = trajectory?.stats;
    written.set(collected.rolloutId, {
      file,
      samples: trajectory?.samples.length ?? 0,
      forks: stats?.fork ?? 0,
      realigns: stats?.realign ?? 0,
      broken: stats?.broken ?? 0,
      drift_tokens: stats?.drift_tokens ?? 0,
      ...(trajectoryError ? { trajectory_error: trajectoryError } : {}),
    });
  }
  return written;
}
