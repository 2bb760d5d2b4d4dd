import { describe, expect, test } from "bun:test";
import type { RolloutState } from "./rollouts.ts";
import { cancelCalls, enterCall, leaveCall } from "./cancel.ts";

/** A rollout's state as the registry holds it; cancel.ts reads only `live`. */
const rollout = () => ({}) as RolloutState;

describe("a call's abort signal (state/cancel.ts)", () => {
  test("aborts when the harness goes, with the harness's reason", () => {
    const state = rollout();
    const harness = new AbortController();
    const entered = enterCall(state, harness.signal)!;
    harness.abort(new Error("client disconnected"));
    expect(entered.signal.aborted).toBe(true);
    expect((entered.signal.reason as Error).message).toBe("client disconnected");
    leaveCall(state, entered);
  });

  test("an already-gone harness gives an aborted signal", () => {
    const harness = new AbortController();
    harness.abort(new Error("gone"));
    expect(enterCall(rollout(), harness.signal)!.signal.aborted).toBe(true);
  });

  test("aborts when the rollout is cancelled; a cancelled rollout refuses new calls", async () => {
    const state = rollout();
    const entered = enterCall(state, new AbortController().signal)!;
    const cancelled = cancelCalls(state, "the trainer's session timed out", 1000);
    expect(entered.signal.aborted).toBe(true);
    expect((entered.signal.reason as Error).message).toContain("rollout cancelled: the trainer's session timed out");
    expect(enterCall(state, new AbortController().signal)).toBeUndefined();
    leaveCall(state, entered);
    expect(await cancelled).toEqual({ aborted: 1, drained: true });
  });

  test("a call that left hears neither source again (its listeners are removed)", () => {
    const state = rollout();
    const harness = new AbortController();
    const entered = enterCall(state, harness.signal)!;
    leaveCall(state, entered);
    harness.abort(new Error("late"));
    state.live!.controller.abort(new Error("late cancel"));
    expect(entered.signal.aborted).toBe(false);
    expect(state.live!.inFlight).toBe(0);
  });
});
