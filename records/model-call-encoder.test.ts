import { describe, expect, test } from "bun:test";
import { create, ModelCallSchema, RecordSchema, toBinary, type Record } from "../schemas/index.ts";
import { encodeModelCallRecord } from "./model-call-encoder.ts";
import { expectedBody, modelCallRecord } from "./testing.ts";

const concat = (parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

function withCall(base: Record, fields: { [name: string]: unknown }): Record {
  // Without $typeName, so that create() builds the nested messages from their fields.
  const { $typeName: _, ...value } = base.kind.value as { [name: string]: unknown };
  return create(RecordSchema, { kind: { case: "modelCall", value: create(ModelCallSchema, { ...value, ...fields } as never) } });
}

const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (Math.imul(i + seed, 2654435761) >>> 0) % 152_000);

/** Every field set, with values at the edges of their encodings. */
function everything(): Record {
  return withCall(modelCallRecord("r-ü", 7, "c", 300), {
    callId: "x".repeat(200), // a length of two varint bytes
    error: "ünïcödé \u{1F600} and a lone surrogate \ud800 in an error",
    upstream: "é".repeat(70), // 140 bytes from 70 chars: the length's size guessed short
    startUnixMs: -0,
    endUnixMs: Number.MAX_VALUE,
    latencyMs: Number.NaN,
    ttftMs: 0.1,
    usage: { promptTokens: 0, completionTokens: 2 ** 32 - 1, totalTokens: 5, cachedTokens: 128 },
    promptTokenIds: ids(40_000, 1),
    completionTokenIds: new Uint32Array(ids(300, 2)),
    completionLogprobs: [-0.5, Number.NaN, -Infinity, 0, -1e-45, -3.4e38],
    requestHeaders: [
      { name: "user-agent", value: "codex" },
      { name: "", value: "" },
      { name: "x-long", value: "v".repeat(300) },
    ],
    session: { "session-id": "s", empty: "", ["k".repeat(130)]: "ü" },
    blobRefs: ["ab".repeat(32), ""],
    upstreamRequestBody: expectedBody("u", 500),
    upstreamAttempts: 2,
    upstreamRequestPatch: new TextEncoder().encode('{"logprobs":true}'),
    tokenStatusReason: "why",
    sampling: {
      temperature: 0,
      topP: 0.95,
      topK: 20,
      minP: 0,
      maxTokens: 0,
      seed: 42,
      presencePenalty: -0,
      minTokens: 1,
      stop: ["</s>", ""],
      stopTokenIds: [151645, 0],
      ignoreEos: false,
      n: 1,
      constraintsJson: "{}",
      temperatureSource: 1,
      topPSource: 2,
      topKSource: 3,
      stopSource: 1,
      ignoreEosSource: 2,
    },
    engine: 1,
    engineVersion: "0.33.0",
    logprobsMode: 1,
    tokenMode: 2,
    chainId: "chain",
    chainParent: "parent",
    chainStart: 2,
    chainStartDetail: "message 3 differs",
    renderedTokens: 17,
    engineRequest: expectedBody("e", 2000),
    chainAnswer: new TextEncoder().encode('{"content":"hi"}'),
    content: [expectedBody("p", 100), new Uint8Array(0), expectedBody("q", 70_000)],
    requestStored: { prefixSeq: 2, prefixItems: 7, literal: expectedBody("lit", 40), items: [80, 1, 3, 5, 3], length: 371_015 },
    upstreamStored: { prefixSeq: 0, prefixItems: 0, literal: new Uint8Array(0), items: [], length: 0 },
    servedWeightVersion: "v3",
    policyVersionMismatch: "expected 3, served 4",
  });
}

describe("encodeModelCallRecord", () => {
  const cases: [string, Record][] = [
    ["a plain call", modelCallRecord("r", 1, "c", 64)],
    ["an empty call", create(RecordSchema, { kind: { case: "modelCall", value: {} } })],
    ["every field set", everything()],
    ["a sub-message over 127 bytes (usage is short, sampling with a long constraint is not)", withCall(modelCallRecord("r", 2, "c"), { sampling: { constraintsJson: "{".repeat(20_000) } })],
  ];
  for (const [name, record] of cases) {
    test(`${name}: toBinary's bytes, in one part or with the bodies as parts`, () => {
      const expected = toBinary(RecordSchema, record);
      const whole = encodeModelCallRecord(record, false)!;
      expect(whole.parts).toHaveLength(1);
      expect(whole.length).toBe(expected.length);
      expect(whole.parts[0]).toEqual(expected);
      const split = encodeModelCallRecord(record, true)!;
      expect(split.length).toBe(expected.length);
      expect(concat(split.parts)).toEqual(expected);
    });
  }

  test("the scratch buffer is not handed out: a second record does not change the first's bytes", () => {
    const first = encodeModelCallRecord(everything(), false)!.parts[0]!;
    const copy = first.slice();
    encodeModelCallRecord(modelCallRecord("other", 1, "d", 5000), false);
    expect(first).toEqual(copy);
  });

  test("what toBinary would reject or coerce is left to it", () => {
    const base = modelCallRecord("r", 1, "c");
    const declined: [string, Record][] = [
      ["a negative id", withCall(base, { promptTokenIds: [1, -1] })],
      ["a fractional id", withCall(base, { completionTokenIds: [1.5] })],
      ["a seq past uint32", withCall(base, { seq: 2 ** 32 })],
      ["a logprob float32 cannot hold", withCall(base, { completionLogprobs: [-1e39] })],
      ["a string that is not one", withCall(base, { model: 5 })],
      ["a body that is not bytes", withCall(base, { responseBody: "text" })],
      ["a negative enum", withCall(base, { status: -1 })],
    ];
    for (const [name, record] of declined) expect([name, encodeModelCallRecord(record, false)]).toEqual([name, undefined]);
    const unknown = modelCallRecord("r", 1, "c");
    (unknown.kind.value as { $unknown?: unknown[] }).$unknown = [{ no: 99, wireType: 0, data: new Uint8Array([1]) }];
    expect(encodeModelCallRecord(unknown, false)).toBeUndefined();
    expect(encodeModelCallRecord(create(RecordSchema, { kind: { case: "blob", value: {} } }), false)).toBeUndefined();
  });
});
