/**
 * The proxy's per-call work on large request bodies, in process, old way against new in one
 * run: a Chat request with a 4 MB screenshot (a `data:image/png;base64,...` URL) and one with a
 * 200 KB prompt.
 *
 * - the content writer (records/content-writer.ts): a body's first call in a rollout (every
 *   piece hashed and stored; a screenshot decoded, checked and hashed when the process has not
 *   seen it) against the same body sent again (a fresh copy, as the next turn sends it), where
 *   everything is a reference and the screenshot's sha256 comes from the cache.
 * - the recorder's encode + CRC32C of the ModelCall with the whole request body (as before
 *   stored bodies) against the ModelCall written now for a body sent again. Also a whole
 *   `log.append` of the latter (encode, CRC, writev to a segment file).
 * - the upstream's answer to the 200 KB prompt (its 40k prompt ids): JSON.parse against
 *   parseAnswer, for the first call and for a call whose ids the rollout's memo has seen.
 *
 *   bun bench/large-body.ts [--iterations 40] [--json]
 */
import { parseArgs } from "node:util";
import { crc32c } from "@node-rs/crc32";
import { encodeRecord } from "../records/encode-record.ts";
import { parseAnswer, type IdsMemo } from "../proxy/capture/answer-json.ts";
import { createContentWriter, openSegmentLog } from "../records/index.ts";
import { base64CacheStats } from "../records/base64-files.ts";
import { modelCallRecord, scratchDir } from "../records/testing.ts";
import { create, RecordSchema, toBinary, type Record } from "../schemas/index.ts";
import { PROMPT_200K } from "./lib/bodies.ts";

const { values } = parseArgs({ options: { iterations: { type: "string", default: "40" }, json: { type: "boolean", default: false } } });
const N = Number(values.iterations);
const encoder = new TextEncoder();

// Screenshot-like bytes (not constant: base64 and sha256 cost does not depend on it, compression would).
const pixels = Buffer.alloc(3 << 20);
for (let i = 0; i < pixels.length; i++) pixels[i] = (i * 2654435761) >>> 24;
const base64 = pixels.toString("base64");
const chat = (content: unknown) => JSON.stringify({ model: "m", stream: false, max_tokens: 50, messages: [{ role: "system", content: "You are a coding agent." }, { role: "user", content }] });
/** The screenshot body; `variant` changes the first pixels, so each variant is an image not seen before. */
const screenshotBody = (variant: number) =>
  chat([{ type: "text", text: "What is on the screen?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from([variant >> 16, variant >> 8, variant]).toString("base64")}${base64.slice(4)}` } }]);
const bodies = { screenshot4m: screenshotBody(0), prompt200k: chat(PROMPT_200K) };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
/** Median ms of `f(i)` over N runs after 3 warm-up runs; `prepare(i)` runs untimed before each. */
function time<T>(f: (input: T, i: number) => unknown, prepare: (i: number) => T): number {
  const ms: number[] = [];
  for (let i = -3; i < N; i++) {
    const input = prepare(i);
    const start = performance.now();
    f(input, i);
    if (i >= 0) ms.push(performance.now() - start);
  }
  return median(ms);
}

type Row = { body: string; step: string; oldMs: number; newMs: number; ratio: number };
const rows: Row[] = [];
const row = (body: string, step: string, oldMs: number, newMs: number) => rows.push({ body, step, oldMs, newMs, ratio: newMs / oldMs });

let variant = 1;
for (const [name, text] of Object.entries(bodies)) {
  const parse = time(() => JSON.parse(text), () => 0);
  const bytes = encoder.encode(text);
  const writer = createContentWriter();
  let seq = 0;
  const store = (body: Uint8Array, rollout: string) => {
    const call = writer.begin(rollout, ++seq, "seg");
    const stored = call.store(body, "request");
    call.commit();
    return { call, stored };
  };
  store(bytes, "seen"); // seen once: later calls of this rollout are references, the image a cache hit
  const first = time((body) => store(body, `new-${seq}`), () => (name === "screenshot4m" ? encoder.encode(screenshotBody(variant++)) : bytes.slice()));
  const hitsBefore = base64CacheStats().hits;
  const repeated = time((body) => store(body, "seen"), () => bytes.slice());
  if (name === "screenshot4m" && base64CacheStats().hits - hitsBefore < N) throw new Error("content writer: the repeated screenshot was not a cache hit");
  row(name, "content writer (new rollout, new image → sent again)", first, repeated);

  // The ModelCall as call-recorder builds it for an untranslated train-mode call: request body,
  // a small response, upstream_request_patch instead of the body again.
  const call = modelCallRecord("bench", 2, "call-bench", 0);
  if (call.kind.case !== "modelCall") throw new Error("unreachable");
  const patch = encoder.encode('{"return_token_ids":true}');
  const again = store(bytes, "seen");
  const records: Record[] = [
    create(RecordSchema, { kind: { case: "modelCall", value: { ...call.kind.value, requestBody: bytes, upstreamRequestPatch: patch } } }),
    create(RecordSchema, { kind: { case: "modelCall", value: { ...call.kind.value, requestBody: new Uint8Array(0), requestStored: again.stored, content: again.call.content, upstreamRequestPatch: patch } } }),
  ];
  const encodeAndCrc = (record: Record) => () => {
    let crc = 0;
    for (const part of encodeRecord(record).parts) crc = crc32c(part, crc);
    return crc;
  };
  const sizes = records.map((r) => `${(toBinary(RecordSchema, r).length / 1e6).toFixed(3)}`).join(" → ");
  row(name, `record encode + crc32c, whole body → stored (${sizes} MB)`, time(encodeAndCrc(records[0]!), () => 0), time(encodeAndCrc(records[1]!), () => 0));
  if (name === "prompt200k") {
    // The upstream's answer to this prompt in train mode carries its 40k ids.
    const answer = JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", model: "m", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop", token_ids: [1, 2] }], usage: { prompt_tokens: 40_000, completion_tokens: 2 }, prompt_token_ids: Array.from({ length: 40_000 }, (_, i) => (i * 7919) % 151_000) });
    const memo: IdsMemo = {};
    parseAnswer(answer, undefined, memo);
    row(name, "answer with 40k prompt ids: JSON.parse → parseAnswer (ids seen before)", time(() => JSON.parse(answer), () => 0), time(() => parseAnswer(answer, undefined, memo), () => 0));
    row(name, "answer with 40k prompt ids: JSON.parse → parseAnswer (first call)", time(() => JSON.parse(answer), () => 0), time(() => parseAnswer(answer), () => 0));
  }
  const scratch = scratchDir("forge-large-body-");
  const log = await openSegmentLog(scratch.dir, { groupCommitMs: 1000 });
  const append = time(() => log.append(records[1]!), () => 0);
  await log.close();
  scratch.cleanup();
  if (values.json) continue;
  console.log(`${name}: JSON.parse ${parse.toFixed(2)} ms, log.append of its stored record ${append.toFixed(2)} ms (encode + CRC + writev, page cache)`);
}

if (values.json) console.log(JSON.stringify(rows, null, 2));
else {
  console.log(`\nmedian of ${N} runs, ms (old → new, new/old)`);
  for (const r of rows) console.log(`${r.body.padEnd(13)} ${r.step.padEnd(46)} ${r.oldMs.toFixed(3).padStart(8)} → ${r.newMs.toFixed(3).padStart(8)}   ${r.ratio.toFixed(2)}x`);
}
