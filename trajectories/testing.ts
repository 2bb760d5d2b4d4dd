/**
 * Test helpers: ModelCall / Rollout / RolloutResult records with token views, written as the
 * proxy writes them (prompts as deltas against the previous call when they extend it).
 */
import {
  create,
  ModelCallSchema,
  Protocol,
  RecordSchema,
  RolloutResultSchema,
  RolloutSchema,
  RolloutStatus,
  TokenStatus,
  type ModelCall,
  type Record,
} from "../schemas/index.ts";
import { commonPrefix } from "../lib/index.ts";
// Names only tests use outside the trajectories area (docs/architecture.md: a face exports what other areas use).
export { manifestPath, sidecarPath } from "./export-files.ts";
export type { ExportManifest } from "./export-manifest.ts";
export { QWEN3_THINK } from "./types.ts";

export type CallSpec = {
  prompt: number[];
  completion: number[];
  logprobs?: number[];
  tokenStatus?: TokenStatus;
  policyVersion?: number;
  blobRefs?: string[];
  requestBody?: unknown;
  responseBody?: unknown;
};

/**
 * A rollout writer: `call()` records a call, storing its prompt as a delta against the rollout's
 * call whose tokens share the longest prefix with it (as the proxy does), or in full.
 *
 * @example
 * const r = rolloutRecords("r1", { task: "t1", group: "g1" });
 * r.call({ prompt: [1, 2], completion: [3] });
 * r.finish(1, RolloutStatus.OK);
 * r.records; // Rollout, ModelCall, RolloutResult
 */
export function rolloutRecords(rolloutId: string, meta: { task?: string; group?: string; experiment?: string; policyVersion?: number; harness?: string } = {}) {
  const records: Record[] = [];
  const held: { callId: string; tokens: number[] }[] = [];
  let seq = 0;
  records.push(
    create(RecordSchema, {
      kind: {
        case: "rollout",
        value: create(RolloutSchema, {
          rolloutId,
          experiment: meta.experiment ?? "exp",
          taskId: meta.task ?? "task",
          group: meta.group ?? "",
          policyVersion: meta.policyVersion ?? 0,
          harness: meta.harness ?? "test",
        }),
      },
    }),
  );
  return {
    records,
    call(spec: CallSpec): ModelCall {
      seq++;
      const callId = `${rolloutId}-${seq}`;
      let prefixOf = "";
      let prefixLen = 0;
      let bestLen = 0;
      for (const h of held) {
        const l = commonPrefix(h.tokens, spec.prompt);
        if (l > bestLen) {
          bestLen = l;
          prefixOf = h.callId;
          prefixLen = l;
        }
      }
      const status = spec.tokenStatus ?? TokenStatus.COMPLETE;
      const missing = status === TokenStatus.MISSING || status === TokenStatus.NOT_REQUESTED;
      const call = create(ModelCallSchema, {
        rolloutId,
        seq,
        callId,
        protocol: Protocol.CHAT,
        requestBody: new TextEncoder().encode(JSON.stringify(spec.requestBody ?? { model: "m", messages: [{ role: "user", content: "hi" }] })),
        responseBody: new TextEncoder().encode(JSON.stringify(spec.responseBody ?? { choices: [{ message: { role: "assistant", content: "ok" } }] })),
        policyVersion: spec.policyVersion ?? meta.policyVersion ?? 0,
        promptTokenIds: missing ? [] : spec.prompt.slice(prefixLen),
        completionTokenIds: missing ? [] : spec.completion,
        completionLogprobs: missing ? [] : (spec.logprobs ?? spec.completion.map((_, k) => -0.25 * (k + 1))),
        tokenStatus: status,
        prefixOf: missing ? "" : prefixOf,
        prefixLen: missing ? 0 : prefixLen,
        promptLen: spec.prompt.length,
        blobRefs: spec.blobRefs ?? [],
      });
      records.push(create(RecordSchema, { kind: { case: "modelCall", value: call } }));
      if (!missing) held.push({ callId, tokens: [...spec.prompt, ...spec.completion] });
      return call;
    },
    finish(reward: number, status: RolloutStatus = RolloutStatus.OK, error = ""): void {
      records.push(
        create(RecordSchema, {
          kind: { case: "rolloutResult", value: create(RolloutResultSchema, { rolloutId, reward, status, error }) },
        }),
      );
    },
  };
}

const THINK = 151667;
const END_THINK = 151668;

function chatBody(messages: unknown[]) {
  return { model: "qwen3", messages };
}

/** Five rollouts (tests/trajectories/): g1 = ok (clean), failed (realign + fork), infra_error; g2 = ok + infra_error (dropped at min 2); g3 = one ok. */
export function scenarioRecords(): Record[] {
  const all: Record[] = [];
  const a = rolloutRecords("a", { task: "t1", group: "g1", experiment: "demo" });
  a.call({ prompt: [1, 2, 3], completion: [10, 11], requestBody: chatBody([{ role: "system", content: "be brief" }, { role: "user", content: "fix it" }]) });
  a.call({ prompt: [1, 2, 3, 10, 11, 4], completion: [12, 13] });
  a.finish(1);
  const b = rolloutRecords("b", { task: "t1", group: "g1", experiment: "demo" });
  b.call({ prompt: [1, 2, 3], completion: [THINK, 5, END_THINK, 271, 20, 21] });
  b.call({ prompt: [1, 2, 3, 20, 21, 6], completion: [22] }); // think stripped: realign
  b.call({ prompt: [1, 9, 9, 9], completion: [23] }); // compaction: fork
  b.finish(0, RolloutStatus.FAILED);
  const c = rolloutRecords("c", { task: "t1", group: "g1", experiment: "demo" });
  c.call({ prompt: [1, 2, 3], completion: [30] });
  c.finish(0, RolloutStatus.INFRA_ERROR);
  const d = rolloutRecords("d", { task: "t2", group: "g2", experiment: "demo" });
  d.call({ prompt: [7], completion: [8] });
  d.finish(1);
  const e = rolloutRecords("e", { task: "t2", group: "g2", experiment: "demo" });
  e.call({ prompt: [7], completion: [8] });
  e.finish(0, RolloutStatus.INFRA_ERROR);
  // interleave the rollouts' records as concurrent rollouts would be
  const lists = [a, b, c, d, e].map((r) => [...r.records]);
  while (lists.some((l) => l.length > 0)) for (const l of lists) if (l.length > 0) all.push(l.shift()!);
  return all;
}

