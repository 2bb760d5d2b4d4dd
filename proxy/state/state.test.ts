import { describe, expect, test } from "bun:test";
import { create, ModelCallSchema, RolloutSchema, TokenStatus } from "../../schemas/index.ts";
import { keyMatchesSha256, keySha256, newApiKey, presentedKey, secretEquals } from "./keys.ts";
import { createPauseGate } from "./pause.ts";
import { createRolloutRegistry } from "./rollouts.ts";

describe("keys", () => {
  test("format, digests and constant-time checks", () => {
    const key = newApiKey();
    expect(key).toMatch(/^fk-[A-Za-z0-9_-]{43}$/);
    expect(newApiKey()).not.toBe(key);
    expect(keyMatchesSha256(key, keySha256(key))).toBe(true);
    expect(keyMatchesSha256(key + "x", keySha256(key))).toBe(false);
    expect(keyMatchesSha256(key, "not-hex")).toBe(false);
    expect(secretEquals("a", "a")).toBe(true);
    expect(secretEquals("a", "ab")).toBe(false);
    expect(presentedKey(new Headers({ authorization: "bearer  fk-1 " }))).toBe("fk-1");
    expect(presentedKey(new Headers({ "x-api-key": "fk-2" }))).toBe("fk-2");
    expect(presentedKey(new Headers({ authorization: "Basic abc" }))).toBeUndefined();
  });
});

describe("rollout registry", () => {
  test("finds rollouts by key and replays calls into recent token sequences", () => {
    const registry = createRolloutRegistry({ recentCalls: 2 });
    const key = newApiKey();
    const state = registry.add(create(RolloutSchema, { rolloutId: "r1", keySha256: keySha256(key) }));
    expect(registry.byKey(key)).toBe(state);
    expect(registry.byKey(newApiKey())).toBeUndefined();
    registry.replayCall(create(ModelCallSchema, { rolloutId: "r1", seq: 1, callId: "c1", promptTokenIds: [1, 2], promptLen: 2, completionTokenIds: [3], tokenStatus: TokenStatus.COMPLETE, policyVersion: 2 }));
    registry.replayCall(create(ModelCallSchema, { rolloutId: "r1", seq: 2, callId: "c2", prefixOf: "c1", prefixLen: 3, promptTokenIds: [4], promptLen: 4, completionTokenIds: [5], tokenStatus: TokenStatus.COMPLETE }));
    expect(state.seq).toBe(2);
    expect(state.recent.map((p) => Array.from(p.tokens))).toEqual([[1, 2, 3], [1, 2, 3, 4, 5]]);
    expect(registry.nextSeq(state)).toBe(3);
    expect(registry.maxPolicyVersion()).toBe(2);
    expect(state.tokenStatusCounts).toEqual({ COMPLETE: 2 });
  });

  test("the token budget drops the least recently used rollout's history", () => {
    const registry = createRolloutRegistry({ maxRecentTokens: 5 });
    const a = registry.add(create(RolloutSchema, { rolloutId: "a" }));
    const b = registry.add(create(RolloutSchema, { rolloutId: "b" }));
    registry.noteCall(a, create(ModelCallSchema, { rolloutId: "a", seq: 1, callId: "a1", completionTokenIds: [9], tokenStatus: TokenStatus.COMPLETE }), [1, 2]);
    registry.noteCall(b, create(ModelCallSchema, { rolloutId: "b", seq: 1, callId: "b1", completionTokenIds: [9], tokenStatus: TokenStatus.COMPLETE }), [1, 2, 3]);
    expect(a.recent).toEqual([]);
    expect(b.recent.length).toBe(1);
  });
});

describe("pause gate", () => {
  test("holds calls while paused, drains, releases with the new version, 429 past the bound", async () => {
    const gate = createPauseGate({ boundMs: 50 });
    expect(await gate.enter()).toBe(0);
    const pausing = gate.pause(1000);
    let released: number | undefined;
    const held = gate.enter().then((v) => (released = v));
    await Bun.sleep(5);
    expect(released).toBeUndefined();
    gate.leave();
    expect(await pausing).toEqual({ drained: true, inFlight: 0 });
    gate.resume(3);
    await held;
    expect(released).toBe(3);
    gate.leave();
    await gate.pause();
    const error = await gate.enter().catch((e) => e);
    expect(error.status).toBe(429);
    expect(error.headers["retry-after"]).toBe("1");
    expect(gate.inFlight).toBe(0);
  });
  test("pause reports drained: false when calls outlive timeout_ms", async () => {
    const gate = createPauseGate({ boundMs: 50 });
    await gate.enter();
    expect(await gate.pause(20)).toEqual({ drained: false, inFlight: 1 });
  });
});
