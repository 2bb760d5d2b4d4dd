import { describe, expect, test } from "bun:test";
import { create, fromBinary, ModelCallSchema, Protocol, toBinary, type ModelCall } from "../schemas/index.ts";
import { createContentStore, requestBodyOf, StoredBodyError, upstreamRequestBodyOf } from "./content-store.ts";
import { createContentWriter, type ContentWriter, type ContentWriterOptions } from "./content-writer.ts";
import { upstreamRequestOf } from "./upstream-request.ts";
import { conversationBody, screenshots, type ConversationOptions, type ConversationProtocol } from "./testing.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * What call-recorder does for one call, without a log: the ModelCall with its bodies stored
 * through `writer`, passed through protobuf binary as a reader gets it. `commit: false` is a
 * call whose append failed.
 */
function recordCall(writer: ContentWriter, rolloutId: string, seq: number, request: Uint8Array, upstream?: Uint8Array, options: { segment?: string; commit?: boolean } = {}): ModelCall {
  const call = writer.begin(rolloutId, seq, options.segment ?? "seg-00000001.forge");
  const requestStored = call.store(request, "request");
  const upstreamStored = upstream ? call.store(upstream, "upstream") : undefined;
  const record = create(ModelCallSchema, {
    rolloutId,
    seq,
    callId: `${rolloutId}-${seq}`,
    protocol: Protocol.CHAT,
    requestBody: requestStored ? new Uint8Array(0) : request,
    upstreamRequestBody: upstreamStored || !upstream ? new Uint8Array(0) : upstream,
    requestStored,
    upstreamStored,
    content: call.content,
    blobRefs: call.files,
  });
  if (options.commit !== false) call.commit();
  return fromBinary(ModelCallSchema, toBinary(ModelCallSchema, record));
}

/** Bytes the request content takes in the records: pieces, literals, item lists, request_body. */
function storedBytes(calls: ModelCall[]): number {
  let total = 0;
  for (const call of calls) {
    const { rolloutId, seq, callId, protocol, ...rest } = call;
    void rolloutId, seq, callId, protocol;
    total += toBinary(ModelCallSchema, create(ModelCallSchema, { content: rest.content, requestStored: rest.requestStored, requestBody: rest.requestBody })).length;
  }
  return total;
}

/** The seqs of the calls whose pieces a call's request refers to in its own items. */
function pieceSeqs(call: ModelCall): number[] {
  const seqs = new Set<number>();
  const items = call.requestStored!.items;
  for (let i = 0; i < items.length; i++) if (items[i]! % 2 === 1) seqs.add(items[++i]!);
  return [...seqs];
}

const protocols: ConversationProtocol[] = ["chat", "anthropic", "responses", "completions", "completions-ids"];

describe("stored bodies rebuild byte for byte", () => {
  const variants: [string, ConversationOptions][] = [
    ["compact JSON", {}],
    ["pretty-printed JSON", { space: 2 }],
    ["screenshots resent every call", { screenshots: screenshots(3, 6000) }],
    ["a sampling field that changes each call", {}],
  ];
  for (const protocol of protocols) {
    for (const [name, options] of variants) {
      test(`${protocol}, ${name}`, () => {
        const writer = createContentWriter();
        const calls: ModelCall[] = [];
        const bodies: Uint8Array[] = [];
        for (let turn = 1; turn <= 12; turn++) {
          const extra = name.startsWith("a sampling") ? { extra: { temperature: turn / 10, seed: turn } } : {};
          const body = conversationBody(protocol, turn, "ro-a", { ...options, ...extra });
          bodies.push(body);
          calls.push(recordCall(writer, "ro-a", turn, body));
        }
        const store = createContentStore();
        calls.forEach((call, i) => expect(Buffer.from(requestBodyOf(call, store)).equals(Buffer.from(bodies[i]!))).toBe(true));
        // Every call after the first is stored as references.
        expect(calls.slice(1).every((c) => c.requestStored !== undefined && c.requestBody.length === 0)).toBe(true);
      });
    }
  }

  test("screenshots are stored once per rollout, decoded, and named in blob_refs", () => {
    const shots = screenshots(4, 30_000);
    const writer = createContentWriter();
    const calls: ModelCall[] = [];
    for (const protocol of ["chat", "anthropic", "responses"] as const) {
      for (let turn = 1; turn <= 6; turn++) calls.push(recordCall(writer, `ro-${protocol}`, turn, conversationBody(protocol, turn, `ro-${protocol}`, { screenshots: shots })));
    }
    for (const protocol of ["chat", "anthropic", "responses"] as const) {
      const mine = calls.filter((c) => c.rolloutId === `ro-${protocol}`);
      const pieces = mine.flatMap((c) => c.content);
      // Each screenshot's 30 000 decoded bytes once; no piece holds base64 text.
      expect(pieces.filter((p) => p.length === 30_000).length).toBe(4);
      expect(pieces.some((p) => decoder.decode(p).includes(shots[0]!.slice(0, 200)))).toBe(false);
      expect(mine.at(-1)!.blobRefs.length).toBe(4);
      const store = createContentStore();
      for (const call of mine) requestBodyOf(call, store);
      const sha = mine.at(-1)!.blobRefs[0]!;
      expect(Buffer.from(store.file(`ro-${protocol}`, sha)!).toString("base64")).toBe(shots[0]!);
    }
  });

  test("odd bodies: not an object, not JSON, empty values, duplicate messages, unterminated strings", () => {
    const long = "x".repeat(3000);
    const odd = [
      `[${JSON.stringify(long)}]`,
      `not json at all ${long}`,
      `{"messages":[],"a":${JSON.stringify(long)}}`,
      `{"messages":[${JSON.stringify({ role: "user", content: long })},${JSON.stringify({ role: "user", content: long })}]}`,
      `{"messages":[{"role":"user","content":"${long}`,
      `  {  "messages" : [ {"content": ${JSON.stringify(long)} } ,\n {"content":"\\"${long}\\\\"} ] , "n" : 1 }  `,
      `{"messages":[{"content":"\\u00e9\\ud83d\\ude00 ${long}"}], "input": "${long}"}`,
      `{"messages":{"not":"an array ${long}"}}`,
      `{"prompt":[1,2,3${",4".repeat(2000)}],"x":[[1],[2],${JSON.stringify(long)}]}`,
      `{"messages":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,${"A".repeat(4000)}"}}]}]} trailing`,
    ];
    const writer = createContentWriter();
    const calls = odd.map((text, i) => recordCall(writer, "ro-odd", i + 1, encoder.encode(text)));
    const store = createContentStore();
    calls.forEach((call, i) => expect(decoder.decode(requestBodyOf(call, store))).toBe(odd[i]!));
  });

  test("a base64 candidate that does not round-trip stays text", () => {
    const shot = screenshots(1, 3000)[0]!;
    const bodies = [
      `{"messages":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,${shot.replaceAll("+", "-")}"}}]}]}`,
      `{"messages":[{"content":[{"type":"image","source":{"data":"${shot.slice(0, 76)}\\n${shot.slice(76)}"}}]}]}`,
      `{"messages":[{"content":[{"type":"image","source":{"data":"${shot.slice(0, -4)}"}}]}]}`,
    ];
    const writer = createContentWriter();
    const calls = bodies.map((text, i) => recordCall(writer, "ro-b64", i + 1, encoder.encode(text)));
    const store = createContentStore();
    calls.forEach((call, i) => expect(decoder.decode(requestBodyOf(call, store))).toBe(bodies[i]!));
  });

  test("small bodies are stored as they are", () => {
    const writer = createContentWriter();
    const body = encoder.encode(JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }));
    const call = recordCall(writer, "ro-s", 1, body);
    expect(call.requestStored).toBeUndefined();
    expect(call.requestBody).toEqual(body);
    expect(requestBodyOf(call, createContentStore())).toEqual(body);
  });

  test("a translated upstream body is stored the same way, sharing the rollout's screenshots", () => {
    const shots = screenshots(2, 9000);
    const writer = createContentWriter();
    const calls: ModelCall[] = [];
    const pairs: [Uint8Array, Uint8Array][] = [];
    for (let turn = 1; turn <= 5; turn++) {
      const pair: [Uint8Array, Uint8Array] = [conversationBody("anthropic", turn, "ro-t", { screenshots: shots }), conversationBody("chat", turn, "ro-t", { screenshots: shots })];
      pairs.push(pair);
      calls.push(recordCall(writer, "ro-t", turn, pair[0], pair[1]));
    }
    const store = createContentStore();
    calls.forEach((call, i) => {
      expect(Buffer.from(requestBodyOf(call, store)).equals(Buffer.from(pairs[i]![0]))).toBe(true);
      expect(Buffer.from(upstreamRequestBodyOf(call, store)).equals(Buffer.from(pairs[i]![1]))).toBe(true);
      expect(upstreamRequestOf(call, store)).toEqual(JSON.parse(decoder.decode(pairs[i]![1])));
    });
    expect(calls.flatMap((c) => c.content).filter((p) => p.length === 9000).length).toBe(2);
  });
});

describe("storage", () => {
  test("a 50-turn conversation growing to 100 KB stores at most 1.2 times its unique content", () => {
    for (const protocol of ["chat", "anthropic", "responses"] as const) {
      const writer = createContentWriter();
      const calls: ModelCall[] = [];
      let last: Uint8Array = new Uint8Array(0);
      let total = 0;
      for (let turn = 1; turn <= 50; turn++) {
        last = conversationBody(protocol, turn, "ro-g", { resultBytes: 1800 });
        total += last.length;
        calls.push(recordCall(writer, "ro-g", turn, last));
      }
      expect(last.length).toBeGreaterThan(95_000);
      // The last body holds every message once: the content a perfect store would keep.
      expect(storedBytes(calls) / last.length).toBeLessThanOrEqual(1.2);
      expect(total / last.length).toBeGreaterThan(20);
    }
  });

  test("a subagent's calls interleaved with the main conversation still find their prefix", () => {
    const writer = createContentWriter();
    const calls: ModelCall[] = [];
    let main: Uint8Array = new Uint8Array(0);
    for (let turn = 1; turn <= 20; turn++) {
      main = conversationBody("anthropic", turn, "main");
      calls.push(recordCall(writer, "ro-i", 2 * turn - 1, main));
      calls.push(recordCall(writer, "ro-i", 2 * turn, conversationBody("anthropic", turn, "subagent")));
    }
    const sub = conversationBody("anthropic", 20, "subagent");
    expect(storedBytes(calls) / (main.length + sub.length)).toBeLessThanOrEqual(1.2);
    expect(calls.slice(2).every((c) => c.requestStored!.prefixSeq === c.seq - 2)).toBe(true);
  });
});

describe("writer state", () => {
  test("a call whose append failed is never referred to", () => {
    const writer = createContentWriter();
    const b1 = conversationBody("chat", 1, "ro-f");
    const b2 = conversationBody("chat", 2, "ro-f");
    const c1 = recordCall(writer, "ro-f", 1, b1, undefined, { commit: false });
    const c2 = recordCall(writer, "ro-f", 2, b2);
    expect(c2.requestStored!.prefixSeq).toBe(0);
    expect(pieceSeqs(c2)).toEqual([2]);
    // A reader that never saw call 1 (it is not in the log) rebuilds call 2.
    expect(requestBodyOf(c2, createContentStore())).toEqual(b2);
    void c1;
  });

  test("a new segment stores everything again: each segment reads on its own", () => {
    const writer = createContentWriter();
    const calls = [1, 2, 3].map((turn) => recordCall(writer, "ro-seg", turn, conversationBody("chat", turn, "ro-seg"), undefined, { segment: turn < 3 ? "seg-1" : "seg-2" }));
    expect(calls[2]!.requestStored!.prefixSeq).toBe(0);
    // Reading only the second segment.
    expect(requestBodyOf(calls[2]!, createContentStore())).toEqual(conversationBody("chat", 3, "ro-seg"));
  });

  test("a forgotten rollout stores its content again; other rollouts are untouched", () => {
    const writer = createContentWriter();
    recordCall(writer, "ro-x", 1, conversationBody("chat", 1, "ro-x"));
    recordCall(writer, "ro-y", 1, conversationBody("chat", 1, "ro-y"));
    writer.forget("ro-x");
    expect(recordCall(writer, "ro-x", 2, conversationBody("chat", 2, "ro-x")).requestStored!.prefixSeq).toBe(0);
    expect(recordCall(writer, "ro-y", 2, conversationBody("chat", 2, "ro-y")).requestStored!.prefixSeq).toBe(1);
  });

  test("past its piece budget the least recently used rollouts are forgotten", () => {
    const options: ContentWriterOptions = { maxPieces: 20 };
    const writer = createContentWriter(options);
    for (const id of ["a", "b", "c"]) recordCall(writer, id, 1, conversationBody("chat", 4, id));
    expect(writer.stats().pieces).toBeLessThanOrEqual(20);
    expect(writer.stats().rollouts).toBeLessThan(3);
  });

  test("calls of a rollout recorded out of seq order (concurrent calls) rebuild in log order", () => {
    const writer = createContentWriter();
    const order = [1, 3, 2, 4];
    const calls = order.map((seq) => recordCall(writer, "ro-o", seq, conversationBody("responses", seq, "ro-o")));
    const store = createContentStore();
    calls.forEach((call) => expect(requestBodyOf(call, store)).toEqual(conversationBody("responses", call.seq, "ro-o")));
  });
});

describe("reader failures name the call and the fix", () => {
  const writer = createContentWriter();
  const calls = [1, 2, 3].map((turn) => recordCall(writer, "ro-e", turn, conversationBody("chat", turn, "ro-e")));

  test("a missing earlier call (lost record, or a reader that skipped it)", () => {
    const store = createContentStore();
    expect(() => requestBodyOf(calls[2]!, store)).toThrow(StoredBodyError);
    expect(() => requestBodyOf(calls[2]!, store)).toThrow(/call ro-e-3 \(rollout ro-e, seq 3\) request_stored: its prefix is call seq 2 of the rollout, which this reader has not seen/);
  });

  test("a piece of a call the reader has not seen", () => {
    const store = createContentStore();
    requestBodyOf(calls[0]!, store);
    const cut = create(ModelCallSchema, { ...calls[1]!, requestStored: { ...calls[1]!.requestStored!, prefixSeq: 0, prefixItems: 0, items: [1 * 4 + 1, 7], literal: new Uint8Array(0), length: 10 } });
    expect(() => requestBodyOf(cut, store)).toThrow(/piece 1 of call seq 7 is not held/);
  });

  test("a length that does not match, items past the literal, prefix past the end", () => {
    const store = createContentStore();
    requestBodyOf(calls[0]!, store);
    const stored = calls[1]!.requestStored!;
    const bad = (patch: object) => create(ModelCallSchema, { ...calls[1]!, requestStored: { ...stored, ...patch } });
    expect(() => requestBodyOf(bad({ length: stored.length + 1 }), store)).toThrow(/rebuilt \d+ bytes, the record says \d+/);
    expect(() => requestBodyOf(bad({ items: [...stored.items, 10_000] }), createContentStore())).toThrow();
    const s2 = createContentStore();
    requestBodyOf(calls[0]!, s2);
    expect(() => requestBodyOf(bad({ prefixItems: 10_000 }), s2)).toThrow(/prefix_items 10000 is past the \d+ items of call seq 1/);
    expect(() => requestBodyOf(bad({ items: [...stored.items, 9] }), createContentStore())).toThrow(/items end inside a piece reference/);
  });

  test("old records (request_body only) read as they are, with or without the store having seen anything", () => {
    const old = create(ModelCallSchema, { rolloutId: "ro-old", seq: 5, requestBody: encoder.encode('{"model":"m"}') });
    expect(requestBodyOf(old, createContentStore())).toEqual(encoder.encode('{"model":"m"}'));
  });
});
