import { describe, expect, test } from "bun:test";
import { fromBinary, Protocol, RecordSchema, RolloutStatus, toBinary, TokenStatus } from "../schemas/index.ts";
import { assembleTrajectory } from "./assemble.ts";
import { AUXILIARY_FINGERPRINTS, fingerprintsFor, matchFingerprint } from "./auxiliary.ts";
import { requestView } from "./request-view.ts";
import { collectRollouts } from "./resolve.ts";
import { rolloutRecords } from "./testing.ts";
import type { AssembleOptions, RolloutTrajectory } from "./types.ts";

const AGENT_SYSTEM = "You are an expert coding assistant.";
const TOOLS = [{ type: "function", function: { name: "bash", parameters: { type: "object", properties: { command: { type: "string" } } } } }];
const TASK = "stock.csv lists items; write the total to total.txt.";

/** An agent call's chat body: the agent's system prompt, the task, `turns` more messages, tools offered. */
function agentBody(turns: { role: string; content: string }[] = [], tools: unknown[] = TOOLS) {
  return { model: "m", messages: [{ role: "system", content: AGENT_SYSTEM }, { role: "user", content: TASK }, ...turns], tools };
}
const step = (n: number) => [
  { role: "assistant", content: `step ${n}` },
  { role: "tool", content: `out ${n}` },
];
const history = (n: number) => Array.from({ length: n }, (_, k) => step(k + 1)).flat();

async function assemble(r: ReturnType<typeof rolloutRecords>, options: AssembleOptions = {}): Promise<RolloutTrajectory> {
  const out: RolloutTrajectory[] = [];
  const records = r.records.map((rec) => fromBinary(RecordSchema, toBinary(RecordSchema, rec)));
  for await (const c of collectRollouts(records)) out.push(assembleTrajectory(c.calls, c.rollout, c.result, options, c.content));
  expect(out).toHaveLength(1);
  return out[0]!;
}

/** Token ids of a growing agent conversation: call n's prompt = call n-1's prompt + completion + [inserted]. */
function agentChain(r: ReturnType<typeof rolloutRecords>, calls: number, start = 0) {
  let prompt = [1, 2, 3];
  for (let n = 0; n < calls; n++) {
    const completion = [100 + start + n];
    r.call({ prompt, completion, requestBody: agentBody(history(start + n)) });
    prompt = [...prompt, ...completion, 50 + start + n];
  }
  return prompt;
}

describe("auxiliary calls: fingerprints", () => {
  test("opencode's title call (first, no tools) is its own sample, never final; the agent's answer gets the reward", async () => {
    const r = rolloutRecords("oc", { harness: "opencode" });
    r.call({
      prompt: [9, 8, 7],
      completion: [77],
      requestBody: { model: "m", messages: [{ role: "system", content: "You are a title generator. You output ONLY a thread title. Nothing else." }, { role: "user", content: TASK }] },
    });
    agentChain(r, 5);
    r.finish(1);
    const t = await assemble(r, { rewardPolicy: "same" });
    expect(t.samples.map((s) => [s.auxiliary, s.is_final, s.reward, s.call_ids.length])).toEqual([
      ["title", false, 0, 1],
      [null, true, 1, 5],
    ]);
    expect(t.kinds.map((k) => k.kind)).toEqual(["auxiliary", "start", "clean", "clean", "clean", "clean"]);
    expect(t.kinds[0]).toMatchObject({ auxiliary: "title", fingerprint: "opencode.title", sample: 0 });
    expect(t.stats).toMatchObject({ calls: 6, clean: 4, fork: 0, auxiliary: 1 });
    expect(t.valid).toBe(true);
  });

  test("pi compacting after the final answer: the summarizer call takes no reward under any policy", async () => {
    for (const rewardPolicy of ["final", "same", "discounted"] as const) {
      const r = rolloutRecords(`pi-${rewardPolicy}`, { harness: "pi" });
      agentChain(r, 5);
      r.call({
        prompt: [4, 5, 6],
        completion: [88, 89],
        requestBody: {
          model: "m",
          messages: [
            { role: "system", content: "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary." },
            { role: "user", content: "<conversation>…</conversation>" },
          ],
        },
      });
      r.finish(1);
      const t = await assemble(r, { rewardPolicy });
      const final = t.samples.filter((s) => s.is_final);
      expect(final).toHaveLength(1);
      expect(final[0]!.call_ids).toHaveLength(5);
      expect(final[0]!.reward).toBe(1);
      const aux = t.samples.find((s) => s.auxiliary)!;
      expect({ kind: aux.auxiliary, reward: aux.reward, final: aux.is_final }).toEqual({ kind: "compaction", reward: 0, final: false });
    }
  });

  test("a fingerprinted side call that extends the agent's tokens does not join its sample (qwen-code's next-speaker check)", async () => {
    const r = rolloutRecords("qc", { harness: "qwen-code" });
    const after2 = agentChain(r, 2);
    // The check: the agent's history plus the check prompt, same system: a clean extension of the tokens.
    r.call({
      prompt: [...after2, 60],
      completion: [61],
      requestBody: agentBody([...history(2), { role: "user", content: "Analyze *only* the content and structure of your immediately preceding response (your last turn)." }], []),
    });
    // The agent goes on from its own last call.
    r.call({ prompt: [...after2, 62], completion: [63], requestBody: agentBody(history(2)) });
    r.finish(1);
    const t = await assemble(r);
    expect(t.samples.map((s) => [s.auxiliary, s.call_ids.length, s.is_final])).toEqual([
      [null, 3, true],
      ["classifier", 1, false],
    ]);
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", "clean", "auxiliary", "clean"]);
  });

  test("codex's compaction (history + its checkpoint prompt, no tools) is recognised though it continues the conversation", async () => {
    const r = rolloutRecords("cx", { harness: "codex" });
    agentChain(r, 3);
    r.call({
      prompt: [1, 2, 3, 40],
      completion: [41],
      requestBody: { model: "m", instructions: AGENT_SYSTEM, input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary." }] }] },
    });
    r.call({ prompt: [1, 2, 3, 42], completion: [43], requestBody: agentBody([{ role: "user", content: "Another language model started to solve this problem…" }]) });
    r.finish(0.5);
    const records = r.records;
    // The checkpoint call is a Responses request.
    (records[4]!.kind.value as { protocol: Protocol }).protocol = Protocol.RESPONSES;
    const t = await assemble(r);
    expect(t.samples.map((s) => [s.auxiliary, s.call_ids.length, s.reward])).toEqual([
      [null, 3, 0],
      ["compaction", 1, 0],
      [null, 1, 0.5],
    ]);
    expect(t.stats).toMatchObject({ fork: 1, auxiliary: 1 });
  });

  test("the fingerprint's text elsewhere in a request (a file the agent read) does not make it auxiliary", async () => {
    const r = rolloutRecords("ocsrc", { harness: "opencode" });
    r.call({ prompt: [1, 2, 3], completion: [4], requestBody: agentBody([{ role: "tool", content: "var he=`You are a title generator. You output ONLY a thread title.`" }]) });
    r.finish(1);
    const t = await assemble(r);
    expect(t.samples.map((s) => s.auxiliary)).toEqual([null]);
  });

  test("a broken auxiliary call is reported but closes no agent sample", async () => {
    const r = rolloutRecords("br", { harness: "opencode" });
    r.call({ prompt: [1, 2, 3], completion: [10], requestBody: agentBody() });
    r.call({
      prompt: [],
      completion: [],
      tokenStatus: TokenStatus.MISSING,
      requestBody: { model: "m", messages: [{ role: "system", content: "You are a title generator. You output ONLY a thread title." }, { role: "user", content: TASK }] },
    });
    r.call({ prompt: [1, 2, 3, 10, 11], completion: [12], requestBody: agentBody(history(1)) });
    r.finish(1);
    const t = await assemble(r);
    expect(t.samples).toHaveLength(1);
    expect(t.samples[0]!.call_ids).toHaveLength(2);
    expect(t.broken).toHaveLength(1);
    expect(t.kinds.map((k) => k.kind)).toEqual(["start", "auxiliary", "clean"]);
    expect(t.stats).toMatchObject({ broken: 1, auxiliary: 1 });
  });

  test("a rollout with auxiliary calls only has no agent sample: excluded, its reward on nothing", async () => {
    const r = rolloutRecords("only", { harness: "opencode" });
    r.call({ prompt: [9], completion: [8], requestBody: { model: "m", messages: [{ role: "system", content: "You are a title generator. You output ONLY a thread title." }, { role: "user", content: TASK }] } });
    r.finish(0, RolloutStatus.FAILED);
    const t = await assemble(r);
    expect({ valid: t.valid, excluded: t.excluded, final: t.samples.filter((s) => s.is_final).length }).toEqual({ valid: false, excluded: "no agent call (auxiliary calls only)", final: 0 });
  });

  test("fingerprints by harness: its own; a command harness or an unknown name gets every harness's", () => {
    expect(fingerprintsFor("pi").map((f) => f.name)).toEqual(["pi.compaction"]);
    expect(fingerprintsFor("forge-react")).toEqual([]);
    const all = Object.values(AUXILIARY_FINGERPRINTS).flat().length;
    expect(fingerprintsFor("command")).toHaveLength(all);
    expect(fingerprintsFor("")).toHaveLength(all);
    // Every text survives JSON encoding unchanged, so the byte search before parsing is sound.
    for (const f of Object.values(AUXILIARY_FINGERPRINTS).flat()) expect(JSON.stringify(f.text)).toBe(`"${f.text}"`);
  });

  test("claude-code's quota probe is the one user message \"quota\", exactly", () => {
    const r = rolloutRecords("q", { harness: "claude-code" });
    const probe = r.call({ prompt: [1], completion: [2], requestBody: { model: "m", max_tokens: 1, messages: [{ role: "user", content: "quota" }] } });
    const notProbe = r.call({ prompt: [1], completion: [2], requestBody: { model: "m", messages: [{ role: "user", content: "quota exceeded?" }] } });
    probe.protocol = notProbe.protocol = Protocol.ANTHROPIC_MESSAGES;
    const fps = fingerprintsFor("claude-code");
    expect(matchFingerprint(probe.requestBody, fps, () => requestView(probe, probe.requestBody))?.name).toBe("claude-code.quota");
    expect(matchFingerprint(notProbe.requestBody, fps, () => requestView(notProbe, notProbe.requestBody))).toBeUndefined();
  });
});

describe("auxiliary calls: the general rule (continues no agent chain)", () => {
  const sideCall = { model: "m", messages: [{ role: "system", content: "Classify the user's request." }, { role: "user", content: TASK }] };

  test("a tool-less call with its own conversation beside a tool-using agent is `unchained`, wherever it sits", async () => {
    for (const at of ["first", "middle", "last"] as const) {
      const r = rolloutRecords(`u-${at}`, { harness: "some-new-harness" });
      if (at === "first") r.call({ prompt: [9, 9], completion: [1], requestBody: sideCall });
      agentChain(r, 2);
      if (at === "middle") r.call({ prompt: [9, 9], completion: [1], requestBody: sideCall });
      // A third agent call that forks (history rewritten), so the chain is not one token sample.
      r.call({ prompt: [1, 2, 3, 77], completion: [78], requestBody: agentBody(history(2)) });
      if (at === "last") r.call({ prompt: [9, 9], completion: [1], requestBody: sideCall });
      r.finish(1);
      const t = await assemble(r, { fingerprints: [] });
      const aux = t.samples.filter((s) => s.auxiliary);
      expect(aux.map((s) => [s.auxiliary, s.reward, s.is_final])).toEqual([["unchained", 0, false]]);
      const final = t.samples.find((s) => s.is_final)!;
      expect(final.reward).toBe(1);
      expect(final.auxiliary).toBeNull();
      expect(t.kinds.filter((k) => k.kind === "auxiliary").map((k) => k.fingerprint)).toEqual(["rule"]);
      // The agent's first sample starts the rollout, its rewrite is the one fork.
      expect(t.stats).toMatchObject({ auxiliary: 1, fork: 1 });
    }
  });

  test("not auxiliary: a tool-less final call that continues the agent's conversation (a forced answer)", async () => {
    const r = rolloutRecords("forced", { harness: "some-new-harness" });
    agentChain(r, 2);
    // Tools dropped for the last turn: the template renders differently (a token fork), but the messages continue the chain.
    r.call({ prompt: [5, 5, 5], completion: [6], requestBody: agentBody([...history(2), { role: "user", content: "Answer now." }], []) });
    r.finish(1);
    const t = await assemble(r, { fingerprints: [] });
    expect(t.samples.map((s) => [s.auxiliary, s.is_final, s.reward])).toEqual([
      [null, false, 0],
      [null, true, 1],
    ]);
  });

  test("not auxiliary: a harness that never offers tools, and Completions calls (no roles or tools to tell)", async () => {
    const r = rolloutRecords("plain", { harness: "some-new-harness" });
    r.call({ prompt: [1], completion: [2], requestBody: { model: "m", messages: [{ role: "user", content: "a" }] } });
    r.call({ prompt: [7], completion: [8], requestBody: sideCall });
    r.finish(1);
    expect((await assemble(r)).samples.map((s) => s.auxiliary)).toEqual([null, null]);
    const c = rolloutRecords("compl", { harness: "some-new-harness" });
    agentChain(c, 1);
    const completion = c.call({ prompt: [7], completion: [8], requestBody: { model: "m", prompt: "Classify: …" } });
    completion.protocol = Protocol.COMPLETIONS;
    c.finish(1);
    expect((await assemble(c)).samples.map((s) => s.auxiliary)).toEqual([null, null]);
  });
});
