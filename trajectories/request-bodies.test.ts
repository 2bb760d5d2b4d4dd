import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Record } from "../schemas/index.ts";
import { exportTrajectories } from "./export.ts";
import { rolloutRecords } from "./testing.ts";

const dir = mkdtempSync(join(tmpdir(), "forge-bodies-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/** Two opencode rollouts: a title call (a fingerprint hit: parsed for its view), then agent calls showing an image. */
function records(): Record[] {
  const tools = [{ type: "function", function: { name: "bash", parameters: { type: "object" } } }];
  const image = { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } };
  const out: Record[] = [];
  for (const id of ["a", "b"]) {
    const r = rolloutRecords(id, { task: "t", group: "g", experiment: "e", harness: "opencode" });
    r.call({ prompt: [900], completion: [901], requestBody: { model: "m", messages: [{ role: "system", content: "You are a title generator. You output ONLY a thread title. Nothing else." }, { role: "user", content: "look" }] } });
    const first = [{ role: "system", content: "You are opencode." }, { role: "user", content: [{ type: "text", text: "look" }, image] }];
    r.call({ prompt: [1, 2], completion: [3], requestBody: { model: "m", messages: first, tools } });
    r.call({ prompt: [1, 2, 3, 4], completion: [5], requestBody: { model: "m", messages: [...first, { role: "assistant", content: "ok" }, { role: "user", content: "more" }], tools } });
    r.finish(1);
    out.push(...r.records);
  }
  return out;
}

test("export parses each request body at most once per call: the fingerprint view, the prompt messages and the images share it", async () => {
  const parsed = new Map<string, number>();
  const parse = JSON.parse;
  JSON.parse = ((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    // Request bodies are the parsed texts holding "messages"; rows read back in pass 2 hold "prompt_ids".
    if (typeof text === "string" && text.includes('"messages"') && !text.includes('"prompt_ids"')) parsed.set(text, (parsed.get(text) ?? 0) + 1);
    return parse(text, reviver);
  }) as typeof JSON.parse;
  let manifest;
  try {
    // --auxiliary keep: the title sample is a row too, so its body is read for the view, the prompt and the images.
    manifest = await exportTrajectories((async function* () { yield* records(); })(), { format: "jsonl", out: join(dir, "batch.jsonl"), auxiliary: "keep" });
  } finally {
    JSON.parse = parse;
  }
  expect(manifest.rows).toBe(4);
  expect(manifest.images.refs).toBe(2);
  expect(manifest.auxiliary.kinds).toEqual({ title: 2 });
  // Each of the 3 distinct bodies (per rollout, the same texts) was read; none twice within a rollout.
  expect(parsed.size).toBe(3);
  expect([...parsed.values()]).toEqual([2, 2, 2]);
});
