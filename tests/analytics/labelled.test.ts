/**
 * The labelled set (analytics/labelled/set.ts) through the whole analytics path: precision and
 * recall of each behaviour signal, and the table in docs/metrics.md is the one this measures.
 */
import { expect, test } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { evaluateLabelledSet, formatScores } from "./labelled/evaluate.ts";
import { labelledSet } from "./labelled/set.ts";

test("the set: at least 40 hand-made trajectories across chat, Responses and Anthropic Messages, labels naming real calls", () => {
  expect(labelledSet.length).toBeGreaterThanOrEqual(40);
  for (const protocol of ["chat", "responses", "anthropic"] as const) expect(labelledSet.filter((t) => t.protocol === protocol).length).toBeGreaterThanOrEqual(10);
  expect(new Set(labelledSet.map((t) => t.id)).size).toBe(labelledSet.length);
  for (const t of labelledSet) {
    const seen = new Map<string, number>();
    const keys: string[] = [];
    for (const step of t.turns.flat()) {
      const n = seen.get(step.id) ?? 0;
      seen.set(step.id, n + 1);
      keys.push(n ? `${step.id}#${n}` : step.id);
    }
    const { errors, edits, checks, recovered, used } = t.labels;
    for (const key of [...errors, ...edits, ...checks, ...recovered]) expect(keys, `${t.id}: label ${key}`).toContain(key);
    for (const key of recovered) expect(errors, `${t.id}: recovered ${key} is not an error`).toContain(key);
    for (const tool of used) expect(t.tools, `${t.id}: used ${tool}`).toContain(tool);
  }
});

test("precision and recall per signal, as docs/metrics.md states them", async () => {
  const scores = await evaluateLabelledSet();
  for (const score of scores) {
    expect(score.items, score.metric).toBeGreaterThan(0);
    // A floor against regressions; the exact figures are in the docs table checked below.
    expect(score.precision ?? 0, score.metric).toBeGreaterThanOrEqual(0.75);
    expect(score.recall ?? 0, score.metric).toBeGreaterThanOrEqual(0.75);
  }
  const docs = await readFile(join(import.meta.dir, "..", "..", "docs", "metrics.md"), "utf8");
  expect(docs).toContain(formatScores(scores));
}, 120_000);
