/**
 * Token-in chains across a proxy restart (docs/token-in.md, "Restart"): restored from the
 * rollout's records at its first call after the restart, concurrent first calls included; and
 * the records that cannot give them back — a damaged frame of the rollout, damage quarantined at
 * the start where a call of it may have been, calls recorded in engine mode — leave a chain
 * started STATE_LOST whose detail says why, after which the rollout goes on in that new chain.
 */
import { expect, test } from "bun:test";
import { mkdtemp, rm, stat, truncate } from "node:fs/promises";
import { openSync, readSync, writeSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readRecords } from "../../records/index.ts";
import { segmentIndexDir } from "../../records/testing.ts";
import { tokenInOptions } from "../../proxy/index.ts";
import { type ProxyOptions } from "../../proxy/testing.ts";
import { startProxyHarness, type ProxyHarness } from "../../proxy/testing.ts";
import { ChainStart, type ModelCall } from "../../schemas/index.ts";

const SLOW = 120_000;
const tools = [{ type: "function", function: { name: "read", description: "read", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } }];
const script = {
  thinking: true,
  tasks: [
    { name: "stock", match: "stock.csv", steps: [{ think: "Read it first.", read: "stock.csv" }, { think: "Read it again.", read: "stock.csv" }, { finish: "42." }] },
    { name: "title", match: "Generate a title", steps: [{ say: "Stock total" }, { say: "Stock" }] },
  ],
};
const TOKEN_IN: Partial<ProxyOptions> = { mode: "train", tokenIn: tokenInOptions({ modelDir: "qwen3" }) };
type Rollout = { rollout_id: string; api_key: string; openai_base_url: string };
type Msg = Record<string, unknown>;

/** One Chat call; the harness's next messages (its echo of the answer, then the tool's result). */
async function turn(h: ProxyHarness, r: Rollout, messages: Msg[], withTools = true): Promise<Msg[]> {
  const moved = { ...r, openai_base_url: r.openai_base_url.replace(/^http:\/\/[^/]+/, h.proxy.url) };
  const m = (await h.client(moved).chat.completions.create({ model: "qwen3", messages, ...(withTools ? { tools } : {}) } as any)).choices[0]!.message as any;
  const calls = (m.tool_calls ?? []) as { id: string; function: { name: string; arguments: string } }[];
  return [...messages, { role: "assistant", content: (m.content ?? "").trim(), ...(calls.length ? { tool_calls: calls } : {}) }, ...calls.map((c) => ({ role: "tool", tool_call_id: c.id, content: "a,1\nb,2\n" }))];
}

async function modelCalls(dataDir: string, rolloutId: string): Promise<(ModelCall & { offset: number; segment: string })[]> {
  const out: (ModelCall & { offset: number; segment: string })[] = [];
  for await (const { record, offset, segment } of readRecords(dataDir, { skipCorrupt: true })) {
    if (record.kind.case === "modelCall" && record.kind.value.rolloutId === rolloutId) out.push(Object.assign(record.kind.value, { offset, segment }));
  }
  return out;
}

/** Flips a byte inside the payload of the frame at `offset` (its CRC no longer matches). */
function damageFrame(path: string, offset: number): void {
  const fd = openSync(path, "r+");
  try {
    const byte = new Uint8Array(1);
    const at = offset + 16 + 24;
    readSync(fd, byte, 0, 1, at);
    byte[0] = byte[0]! ^ 0xff;
    writeSync(fd, byte, 0, 1, at);
  } finally {
    closeSync(fd);
  }
}

/**
 * A rollout with two calls in a first proxy (`first` options), `between` done to its data dir
 * while no proxy runs, then a token-in proxy on it: the rollout's third and fourth calls.
 */
async function acrossRestart(first: Partial<ProxyOptions>, between: (dataDir: string, calls: (ModelCall & { offset: number; segment: string })[]) => void | Promise<void>) {
  const dataDir = await mkdtemp(join(tmpdir(), "forge-token-in-restart-"));
  try {
    const h1 = await startProxyHarness({ dataDir, sim: { script }, proxy: first });
    const r = await h1.register({ task_id: "stock" });
    let m: Msg[] = [{ role: "user", content: "stock.csv: write the total." }];
    m = await turn(h1, r, m);
    // Another rollout's record after the call: the call's frame is not the segment's last.
    await h1.register({ task_id: "other" });
    await h1.close();
    await between(dataDir, await modelCalls(dataDir, r.rollout_id));
    // The integrity check of indexed segments waits: a damaged frame is found by the restore's own read.
    const h2 = await startProxyHarness({ dataDir, sim: { script }, proxy: { ...TOKEN_IN, integrityCheckDelayMs: 600_000 } });
    try {
      m = await turn(h2, r, m);
      await turn(h2, r, m);
    } finally {
      await h2.close();
    }
    return (await modelCalls(dataDir, r.rollout_id)).slice(-2);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

test(
  "restored at the first call after a restart: two calls at once, on two chains, both continue theirs",
  async () => {
    const h = await startProxyHarness({ sim: { script }, proxy: TOKEN_IN });
    try {
      const r = await h.register({ task_id: "stock" });
      const main = await turn(h, r, [{ role: "user", content: "stock.csv: write the total." }]);
      const title = await turn(h, r, [{ role: "system", content: "Generate a title for this conversation." }, { role: "user", content: "stock.csv" }], false);
      await h.restart();
      await Promise.all([turn(h, r, main), turn(h, r, [...title, { role: "user", content: "Shorter." }], false)]);
      const calls = await h.calls(r.rollout_id);
      const after = calls.slice(2).map((c) => [c.chainStart, c.chainId, c.chainParent]).sort();
      expect(after).toEqual([[0, calls[0]!.callId, calls[0]!.callId], [0, calls[1]!.callId, calls[1]!.callId]].sort());
      const samples = h.sims[0]!.samples.filter((s) => s.rollout === r.rollout_id);
      for (const c of calls.slice(2)) {
        const parent = samples[calls.findIndex((p) => p.callId === c.chainParent)]!;
        const own = samples[calls.indexOf(c)]!;
        expect(own.prompt_token_ids.slice(0, parent.prompt_token_ids.length + parent.token_ids.length)).toEqual([...parent.prompt_token_ids, ...parent.token_ids]);
      }
    } finally {
      await h.close();
    }
  },
  SLOW,
);

test(
  "a damaged frame of the rollout (found by the restore's read): a chain starts STATE_LOST naming the damage; the next call continues it",
  async () => {
    const [lost, next] = await acrossRestart(TOKEN_IN, (dataDir, calls) => damageFrame(join(dataDir, "log", calls[0]!.segment), calls[0]!.offset));
    expect([lost!.chainStart, next!.chainStart, next!.chainParent]).toEqual([ChainStart.STATE_LOST, 0, lost!.callId]);
    expect(lost!.chainStartDetail).toMatch(/^the proxy restarted and the rollout's chains could not be restored from its records: a call of the rollout may be in damaged records \(.*CRC mismatch at offset \d+/);
  },
  SLOW,
);

test(
  "damage quarantined at the start, where a call of the rollout may have been: STATE_LOST naming the segment",
  async () => {
    const [lost] = await acrossRestart(TOKEN_IN, async (dataDir, calls) => {
      damageFrame(join(dataDir, "log", calls[0]!.segment), calls[0]!.offset);
      // Without its index the segment is scanned at the start: the damaged range is quarantined and skipped.
      await rm(segmentIndexDir(join(dataDir, "log")), { recursive: true, force: true });
    });
    expect(lost!.chainStart).toBe(ChainStart.STATE_LOST);
    expect(lost!.chainStartDetail).toMatch(/damaged records \(seg-\d+\.forge has 1 damaged range\(s\), quarantined in log\/quarantine\/\)/);
  },
  SLOW,
);

test(
  "a torn last frame cut at the start (a kill during a write): which rollout it held is unknown, so a rollout of that segment starts STATE_LOST too",
  async () => {
    const [lost] = await acrossRestart(TOKEN_IN, async (dataDir, calls) => {
      const path = join(dataDir, "log", calls[0]!.segment);
      await truncate(path, (await stat(path)).size - 7);
      await rm(segmentIndexDir(join(dataDir, "log")), { recursive: true, force: true });
    });
    expect(lost!.chainStart).toBe(ChainStart.STATE_LOST);
    expect(lost!.chainStartDetail).toContain("has 1 damaged range(s), quarantined in log/quarantine/");
  },
  SLOW,
);

test(
  "calls recorded in engine mode (no token-in fields): STATE_LOST saying so; the next call continues the new chain",
  async () => {
    const [lost, next] = await acrossRestart({ mode: "train" }, () => {});
    expect([lost!.chainStart, next!.chainStart, next!.chainParent]).toEqual([ChainStart.STATE_LOST, 0, lost!.callId]);
    expect(lost!.chainStartDetail).toContain("its 1 recorded call(s) carry no token-in fields (recorded in engine mode, or by a proxy from before token-in mode)");
  },
  SLOW,
);
