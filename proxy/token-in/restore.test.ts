import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { loadModel, QWEN3, type Model } from "../../model/index.ts";
import { CallStatus, ChainStart, create, ModelCallSchema, Protocol, TokenMode, TokenStatus, type ModelCall } from "../../schemas/index.ts";
import { startProxyHarness, type ProxyHarness } from "../testing.ts";
import { MAX_CHAINS, type Chain, type RolloutChains } from "../state/chains.ts";
import { tokenInOptions } from "./spec.ts";
import { chainsFromRecords, restoreChains, RESTART_LOST } from "./restore.ts";

let model: Model;
beforeAll(async () => {
  model = await loadModel(QWEN3);
});

const encoder = new TextEncoder();
const tools = [{ type: "function", function: { name: "read", description: "read", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } }];

/** A token-in call as call.ts records it: the Chat request (stored whole), its ids, its chain fields. */
function recorded(seq: number, o: { chain?: string; parent?: string; start?: ChainStart; detail?: string; messages?: unknown[]; status?: CallStatus; answer?: string; mode?: TokenMode; protocol?: Protocol; body?: Uint8Array; prefixOf?: string }): ModelCall {
  const callId = `call-${seq}`;
  return create(ModelCallSchema, {
    rolloutId: "ro-1",
    seq,
    callId,
    protocol: o.protocol ?? Protocol.CHAT,
    status: o.status ?? CallStatus.OK,
    tokenStatus: TokenStatus.COMPLETE,
    requestBody: o.body ?? encoder.encode(JSON.stringify({ model: "qwen3", tools, messages: o.messages ?? [{ role: "user", content: `question ${seq}` }] })),
    promptTokenIds: o.prefixOf ? [seq] : [seq, seq, seq],
    ...(o.prefixOf ? { prefixOf: o.prefixOf, prefixLen: 3, promptLen: 4 } : {}),
    completionTokenIds: [100 + seq, 151645],
    tokenMode: o.mode ?? TokenMode.TOKEN_IN,
    chainId: o.chain ?? callId,
    chainParent: o.parent ?? "",
    chainStart: o.start ?? ChainStart.UNSPECIFIED,
    chainStartDetail: o.detail ?? "",
    chainAnswer: encoder.encode(o.answer ?? JSON.stringify({ content: `answer ${seq}`, reasoning: null, tool_calls: [] })),
  });
}

const ids = (r: ReturnType<typeof chainsFromRecords>) => r.chains.map((c) => [c.id, c.lastCall]);
const why = (r: ReturnType<typeof chainsFromRecords>) => (r.lost ? r.why : "");

describe("chains from a rollout's records: the live fold", () => {
  test("a call recorded OK with its answer moves its chain first; at most MAX_CHAINS are kept; the state of each is its last call's", () => {
    const calls = Array.from({ length: MAX_CHAINS + 1 }, (_, i) => recorded(i + 1, { start: i === 0 ? ChainStart.FIRST : ChainStart.NEW_CONVERSATION }));
    // Chain call-2 goes on after the others: most recently used, kept; call-1 is the oldest, dropped.
    calls.push(recorded(10, { chain: "call-2", parent: "call-2", messages: [{ role: "user", content: "question 2" }, { role: "assistant", content: "answer 2" }, { role: "user", content: "more" }], prefixOf: "call-2" }));
    const restored = chainsFromRecords(model, { calls, damage: "" });
    expect(ids(restored)).toEqual([["call-2", "call-10"], ...Array.from({ length: MAX_CHAINS - 1 }, (_, i) => [`call-${MAX_CHAINS + 1 - i}`, `call-${MAX_CHAINS + 1 - i}`])]);
    const head = restored.chains[0]!;
    // Its prompt rebuilt along the delta (call-2's first 3 ids + its own), its tokens the completion after it.
    expect([Array.from(head.prompt), Array.from(head.tokens)]).toEqual([[2, 2, 2, 10], [2, 2, 2, 10, 110, 151645]]);
    expect(head.lastParent).toBe("call-2");
    expect(head.keys.length).toBe(3);
  });

  test("failed calls and calls without an answer leave their chain where it was", () => {
    const calls = [recorded(1, { start: ChainStart.FIRST }), recorded(2, { chain: "call-1", parent: "call-1", status: CallStatus.UPSTREAM_ERROR }), recorded(3, { chain: "call-1", parent: "call-1", answer: "" })];
    expect(ids(chainsFromRecords(model, { calls, damage: "" }))).toEqual([["call-1", "call-1"]]);
  });

  test("a chain started STATE_LOST found none: the chains before it are not brought back; a failed one leaves them lost, with its reason", () => {
    const lostAgain = recorded(2, { start: ChainStart.STATE_LOST, detail: "the proxy's token budget dropped them" });
    expect(ids(chainsFromRecords(model, { calls: [recorded(1, { start: ChainStart.FIRST }), lostAgain], damage: "" }))).toEqual([["call-2", "call-2"]]);
    const failed = chainsFromRecords(model, { calls: [recorded(1, { start: ChainStart.FIRST }), { ...lostAgain, status: CallStatus.TIMEOUT }], damage: "" });
    expect([failed.lost, why(failed)]).toEqual([true, "the proxy's token budget dropped them"]);
  });

  test("no calls, or none that could have been token-in: the next call is the rollout's first", () => {
    expect(chainsFromRecords(model, { calls: [], damage: "" })).toEqual({ chains: [], lost: false });
    expect(chainsFromRecords(model, { calls: [recorded(1, { mode: TokenMode.ENGINE, protocol: Protocol.COMPLETIONS })], damage: "" })).toEqual({ chains: [], lost: false });
  });
});

describe("records that cannot give the chains back: lost, saying why", () => {
  const cases: [string, () => ReturnType<typeof chainsFromRecords>, string][] = [
    ["damage where a call may be", () => chainsFromRecords(model, { calls: [recorded(1, { start: ChainStart.FIRST })], damage: "seg-00000002.forge has 1 damaged range(s)" }), "a call of the rollout may be in damaged records (seg-00000002.forge has 1 damaged range(s))"],
    ["calls recorded without token-in fields", () => chainsFromRecords(model, { calls: [recorded(1, { mode: TokenMode.ENGINE }), recorded(2, { mode: TokenMode.ENGINE, protocol: Protocol.ANTHROPIC_MESSAGES })], damage: "" }), "its 2 recorded call(s) carry no token-in fields (recorded in engine mode, or by a proxy from before token-in mode)"],
    ["a prompt delta whose parent is missing", () => chainsFromRecords(model, { calls: [recorded(2, { prefixOf: "call-1" })], damage: "" }), "chain call-2, call call-2 (seq 2): its prompt ids do not rebuild along their delta chain"],
    ["a request body that is not JSON", () => chainsFromRecords(model, { calls: [recorded(1, { body: encoder.encode("{not json") })], damage: "" }), "the Chat request its prompt was rendered from does not rebuild"],
    ["a request the model does not prepare", () => chainsFromRecords(model, { calls: [recorded(1, { body: encoder.encode(JSON.stringify({ model: "qwen3", messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: 3 } }] })) })], damage: "" }), "does not prepare its recorded Chat request"],
    ["a chain_answer that is not token-in's answer JSON", () => chainsFromRecords(model, { calls: [recorded(1, { answer: '{"content": "x", "tool_calls": [{"name": 3}]}' })], damage: "" }), "its chain_answer is not the answer JSON token-in mode writes"],
  ];
  for (const [name, run, reason] of cases) {
    test(name, () => {
      const restored = run();
      expect(restored.chains).toEqual([]);
      expect(why(restored)).toStartWith(`${RESTART_LOST}: `);
      expect(why(restored)).toContain(reason);
    });
  }

  test("restoreChains never throws: a failing read is a reason too, and a warning", async () => {
    const warn = spyOn(console, "warn").mockImplementation(() => {});
    try {
      const chains: RolloutChains = { list: [], recorded: () => Promise.reject(new Error("EIO: seg-00000001.forge")) };
      await restoreChains(model, chains, "ro-1");
      expect(chains).toEqual({ list: [], lost: true, lostWhy: `${RESTART_LOST}: reading them back failed (EIO: seg-00000001.forge)` });
      expect(String(warn.mock.calls[0]?.[0])).toContain("rollout ro-1");
    } finally {
      warn.mockRestore();
    }
  });
});

describe("restored from a real proxy's records: the chains the live proxy held, field for field", () => {
  let h: ProxyHarness;
  const script = {
    thinking: true,
    tasks: [
      { name: "stock", match: "stock.csv", steps: [{ think: "Read it first.", say: "I'll look.", read: "stock.csv" }, { think: "Sum.", bash: "awk -F, '{ s += $2 } END { print s }' stock.csv" }, { finish: "42." }] },
      { name: "title", match: "Generate a title", steps: [{ say: "Stock total" }] },
    ],
  };
  beforeAll(async () => {
    h = await startProxyHarness({ sim: { script }, proxy: { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) } });
  });
  afterAll(async () => {
    await h?.close();
  });

  test(
    "two chains, a retry (streamed), a rewritten history",
    async () => {
      const r = await h.register({ task_id: "stock" });
      const send = async (body: Record<string, unknown>) => (await h.client(r).chat.completions.create({ model: "qwen3", tools, ...body, stream: false } as any)).choices[0]!.message as any;
      const user = { role: "user", content: "stock.csv: write the total." };
      const a1 = await send({ messages: [user] });
      await send({ messages: [{ role: "system", content: "Generate a title for this conversation." }, user], tools: undefined });
      const m2 = [user, { role: "assistant", content: a1.content, tool_calls: a1.tool_calls }, { role: "tool", tool_call_id: a1.tool_calls[0].id, content: "a,1\nb,2\n" }];
      await send({ messages: m2 });
      // The retry streamed: the chain's state after it holds the answer the stream sent.
      for await (const _ of (await h.client(r).chat.completions.create({ model: "qwen3", tools, messages: m2, stream: true } as any)) as any);
      await send({ messages: [{ role: "user", content: "Summary: stock.csv holds a,1 b,2. Write the total." }] });

      const live = (h.proxy.proxy.state.registry.get(r.rollout_id)!.chains as RolloutChains).list;
      expect(live.length).toBe(3);
      await h.restart();
      const state = h.proxy.proxy.state.registry.get(r.rollout_id)!;
      expect(state.chains?.recorded).toBeDefined();
      await restoreChains(model, state.chains!, r.rollout_id);
      const plain = (c: Chain) => ({ ...c, prompt: Array.from(c.prompt), tokens: Array.from(c.tokens) });
      expect(state.chains!.list.map(plain)).toEqual(live.map(plain));
      expect(state.chains!.lost).toBe(false);
    },
    120_000,
  );
});
