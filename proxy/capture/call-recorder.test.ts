import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { CallStatus, create, ModelCallSchema, Protocol, RecordSchema, RolloutResultSchema, RolloutSchema, RolloutStatus } from "../../schemas/index.ts";
import * as fs from "node:fs";
import { promisify } from "node:util";
import { createContentStore, openSegmentLog, readRecords, readSegment, requestBodyOf, type SegmentLog, type WriterIo } from "../../records/index.ts";
import { conversationBody, scratchDir, screenshots } from "../../records/testing.ts";
import { createProxyMetrics } from "../metrics.ts";
import { createRolloutRegistry, type RolloutRegistry } from "../state/rollouts.ts";
import { createCallRecorder, type CallRecorder, type RecordableCall } from "./call-recorder.ts";
import { newCapture } from "./tokens.ts";

let scratch: ReturnType<typeof scratchDir>;
beforeEach(() => (scratch = scratchDir("forge-call-recorder-")));
afterEach(() => scratch.cleanup());

function finished(registry: RolloutRegistry, rolloutId: string, requestBody: Uint8Array, upstream?: Uint8Array): RecordableCall {
  const rollout = registry.get(rolloutId) ?? registry.add(create(RolloutSchema, { rolloutId }));
  return {
    record: create(ModelCallSchema, {
      rolloutId,
      seq: registry.nextSeq(rollout),
      callId: `call-${crypto.randomUUID()}`,
      protocol: Protocol.CHAT,
      startUnixMs: Date.now(),
      responseBody: new TextEncoder().encode('{"choices":[]}'),
      model: "m",
      upstream: "http://u",
      httpStatus: 200,
      status: CallStatus.OK,
      upstreamAttempts: 1,
    }),
    rollout,
    protocolName: "chat",
    startPerf: performance.now(),
    ttftMs: undefined,
    policyVersion: 0,
    requestBody,
    upstreamRequestBody: upstream,
    capture: newCapture(),
    train: false,
    echo: false,
    tokenIn: undefined,
  };
}

async function recorderOver(options: { segmentMaxBytes?: number; io?: WriterIo } = {}): Promise<{ log: SegmentLog; registry: RolloutRegistry; recorder: CallRecorder }> {
  const log = await openSegmentLog(scratch.dir, { groupCommitMs: 60_000, ...options });
  const registry = createRolloutRegistry();
  return { log, registry, recorder: createCallRecorder(log, registry, createProxyMetrics()) };
}

describe("the recorder stores request bodies as references", () => {
  test("rollouts interleaved across many segments: every segment reads on its own, and the whole log too", async () => {
    const { log, registry, recorder } = await recorderOver({ segmentMaxBytes: 24_000 });
    const sent = new Map<string, Uint8Array>();
    for (let turn = 1; turn <= 12; turn++) {
      for (const [rollout, protocol] of [["ro-a", "chat"], ["ro-b", "anthropic"], ["ro-c", "responses"]] as const) {
        const body = conversationBody(protocol, turn, rollout, { screenshots: screenshots(2, 1500, rollout) });
        const call = recorder.record(finished(registry, rollout, body));
        sent.set(call.callId, body);
      }
    }
    const segment = log.stats().segment;
    await log.close();
    expect(segment).not.toBe("seg-00000001.forge");
    let segments = 0;
    for (let n = 1; `seg-${String(n).padStart(8, "0")}.forge` <= segment; n++) {
      const store = createContentStore();
      for await (const { record } of readSegment(`${scratch.dir}/log/seg-${String(n).padStart(8, "0")}.forge`)) {
        if (record.kind.case !== "modelCall") continue;
        expect(Buffer.from(requestBodyOf(record.kind.value, store)).equals(Buffer.from(sent.get(record.kind.value.callId)!))).toBe(true);
      }
      segments++;
    }
    expect(segments).toBeGreaterThan(2);
    const store = createContentStore();
    let calls = 0;
    for await (const { record } of readRecords(scratch.dir)) {
      if (record.kind.case !== "modelCall") continue;
      expect(Buffer.from(requestBodyOf(record.kind.value, store)).equals(Buffer.from(sent.get(record.kind.value.callId)!))).toBe(true);
      calls++;
    }
    expect(calls).toBe(36);
  });

  test("a call whose record was refused leaves nothing the next call refers to", async () => {
    const { log, registry, recorder } = await recorderOver();
    recorder.record(finished(registry, "ro-f", conversationBody("chat", 1, "ro-f")));
    // A record that does not encode (BAD_RECORD): that call's problem, the log goes on.
    const bad = finished(registry, "ro-f", conversationBody("chat", 2, "ro-f"));
    bad.record.httpStatus = Number.NaN;
    expect(() => recorder.record(bad)).toThrow(/does not encode/);
    expect(recorder.health.failure).toBe("");
    const third = recorder.record(finished(registry, "ro-f", conversationBody("chat", 3, "ro-f")));
    // Its prefix and pieces are the first call's and its own, never the refused one's.
    expect(third.requestStored!.prefixSeq).toBe(1);
    await log.close();
    const store = createContentStore();
    const bodies: Uint8Array[] = [];
    for await (const { record } of readRecords(scratch.dir)) if (record.kind.case === "modelCall") bodies.push(requestBodyOf(record.kind.value, store));
    expect(bodies).toEqual([conversationBody("chat", 1, "ro-f"), conversationBody("chat", 3, "ro-f")]);
  });

  test("a log that cannot be written fails the recorder (the proxy then refuses calls)", async () => {
    let fail = false;
    // The writer's system calls, with writev failing on demand (a full disk).
    const io: WriterIo = {
      writev(fd, buffers, position) {
        if (fail) throw Object.assign(new Error("ENOSPC: injected"), { code: "ENOSPC" });
        return fs.writevSync(fd, buffers, position);
      },
      ftruncate: (fd, length) => fs.ftruncateSync(fd, length),
      fdatasync: promisify(fs.fdatasync),
      fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
    };
    const { log, registry, recorder } = await recorderOver({ io });
    recorder.record(finished(registry, "ro-n", conversationBody("chat", 1, "ro-n")));
    fail = true;
    expect(() => recorder.record(finished(registry, "ro-n", conversationBody("chat", 2, "ro-n")))).toThrow(/no space left/);
    expect(recorder.health.failure).toContain("cannot be written");
    await log.close();
  });

  test("a finished rollout's late call stores its content again", async () => {
    const { log, registry, recorder } = await recorderOver();
    recorder.record(finished(registry, "ro-l", conversationBody("chat", 2, "ro-l")));
    recorder.append(create(RecordSchema, { kind: { case: "rolloutResult", value: create(RolloutResultSchema, { rolloutId: "ro-l", status: RolloutStatus.OK }) } }));
    const late = recorder.record(finished(registry, "ro-l", conversationBody("chat", 3, "ro-l")));
    expect(late.requestStored!.prefixSeq).toBe(0);
    await log.close();
    // A reader that dropped the rollout at its result still rebuilds the late call.
    expect(requestBodyOf(late, createContentStore())).toEqual(conversationBody("chat", 3, "ro-l"));
  });

  test("a translated call's upstream body shares the rollout's content; the first call of a rollout writes its screenshot once", async () => {
    const { log, registry, recorder } = await recorderOver();
    const shot = screenshots(1, 200_000, "big")[0]!;
    const calls = [1, 2, 3].map((turn) =>
      recorder.record(finished(registry, "ro-t", conversationBody("anthropic", turn + 1, "ro-t", { screenshots: [shot] }), conversationBody("chat", turn + 1, "ro-t", { screenshots: [shot] }))),
    );
    await log.close();
    const shots = calls.flatMap((c) => c.content).filter((p) => p.length === 200_000);
    expect(shots.length).toBe(1);
    expect(calls.every((c) => c.blobRefs.length === 1)).toBe(true);
    // The log holds the screenshot once: the three calls' records are far smaller than one body.
    const size = (await Bun.file(`${scratch.dir}/log/seg-00000001.forge`).arrayBuffer()).byteLength;
    expect(size).toBeLessThan(200_000 + 60_000);
  });
});
