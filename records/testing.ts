/**
 * Test helpers: one record of each kind, and a scratch data directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CallStatus,
  create,
  Protocol,
  RecordSchema,
  RolloutStatus,
  TokenStatus,
  type Record,
} from "../schemas/index.ts";

/**
 * A ModelCall record with a body of `bodyBytes` bytes derived from `callId` (so a reader can
 * check it byte for byte with `expectedBody`).
 *
 * @example
 * log.append(modelCallRecord("r1", 1, "r1-1", 2048));
 */
export function modelCallRecord(rolloutId: string, seq: number, callId: string, bodyBytes = 64): Record {
  return create(RecordSchema, {
    kind: {
      case: "modelCall",
      value: {
        rolloutId,
        seq,
        callId,
        startUnixMs: 1_764_000_000_000.25,
        endUnixMs: 1_764_000_000_900.5,
        protocol: Protocol.CHAT,
        requestBody: expectedBody(callId, bodyBytes),
        responseBody: new TextEncoder().encode(`{"id":"${callId}"}`),
        model: "qwen3",
        upstream: "http://127.0.0.1:8000",
        policyVersion: 3,
        stream: true,
        httpStatus: 200,
        status: CallStatus.OK,
        usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5 },
        promptTokenIds: [151644, 9707, 151645],
        completionTokenIds: [9707, 151645],
        completionLogprobs: [-0.5, -0.125],
        finishReason: "stop",
        tokenStatus: TokenStatus.COMPLETE,
        prefixOf: seq > 1 ? `${rolloutId}-${seq - 1}` : "",
        prefixLen: seq > 1 ? 5 : 0,
        promptLen: 3,
        session: { "session-id": rolloutId },
      },
    },
  });
}

/** Deterministic bytes for a call id: what `modelCallRecord` puts in request_body. */
export function expectedBody(callId: string, bytes: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let h = 2166136261;
  for (let i = 0; i < callId.length; i++) h = Math.imul(h ^ callId.charCodeAt(i), 16777619);
  for (let i = 0; i < bytes; i++) {
    h = Math.imul(h ^ i, 16777619);
    out[i] = h >>> 24;
  }
  return out;
}

/** The request_body size test-writer.ts uses for record `n` of stream `s` (1..maxBytes, varied). */
export function bodySizeFor(stream: number, n: number, maxBytes: number): number {
  return 1 + ((n * 7919 + stream * 104729) % maxBytes);
}

/** One record of each of the four kinds. */
export function recordsOfEveryKind(): Record[] {
  return [
    create(RecordSchema, {
      kind: {
        case: "rollout",
        value: { rolloutId: "r1", experiment: "exp", iteration: 2, taskId: "t1", group: "t1@3", attempt: 1, harness: "codex", createdUnixMs: 1.5, policyVersion: 3, labels: { commit: "abc" }, keySha256: "00ff" },
      },
    }),
    modelCallRecord("r1", 1, "r1-1", 300),
    create(RecordSchema, { kind: { case: "blob", value: { sha256: "ab".repeat(32), mediaType: "image/png", data: new Uint8Array([137, 80, 78, 71, 0, 255]) } } }),
    create(RecordSchema, {
      kind: {
        case: "rolloutResult",
        value: { rolloutId: "r1", reward: 0.75, status: RolloutStatus.FAILED, verifierOutput: "1 of 2 tests", finishedUnixMs: 2.5, error: "", metrics: { tests: 2 } },
      },
    }),
  ];
}

/** A scratch data directory, removed by `cleanup()`. */
export function scratchDir(prefix = "forge-recorder-"): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
