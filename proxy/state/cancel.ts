/**
 * Cancelling a rollout (POST /control/rollouts/:id/cancel): a trainer whose session timed out
 * or failed ends the rollout so that its harness, if still running, cannot go on calling the
 * trainer's servers (which may be asleep or hold the next weights) under the old rollout. The
 * proxy refuses its new calls at once (409), aborts the calls in flight, waits until they are
 * recorded, and only then writes the result: no call of the rollout is recorded after it.
 */
import type { RolloutLive, RolloutState } from "./rollouts.ts";

function liveOf(state: RolloutState): RolloutLive {
  return (state.live ??= { inFlight: 0, controller: new AbortController(), cancelling: undefined, idle: [] });
}

/** A call's abort signal (its harness gone, or its rollout cancelled), until `leaveCall` lets go of its sources. */
export interface CallSignal {
  signal: AbortSignal;
  /** Removes the call's listeners from the harness's and the rollout's signals. */
  release(): void;
}

/**
 * Counts a call of the rollout in; returns the signal that aborts it on a cancel (with the
 * harness's own), or undefined when the rollout is being cancelled (the call is refused).
 *
 * Not `AbortSignal.any([harness, rollout])`: a signal made so stays a dependent of the rollout's
 * long-lived one, and one with abort listeners (the upstream client adds one) is kept alive while
 * a source may still abort, so every call's signal, listener and request body stayed in memory as
 * long as its rollout (the registry keeps finished rollouts): ~15 KB a call
 * (docs/performance.md, "twelfth session"). The call's own controller, with listeners that
 * `leaveCall` removes, leaves nothing behind.
 *
 * @example
 * const entered = enterCall(state, request.signal); // later: leaveCall(state, entered)
 */
export function enterCall(state: RolloutState, harness: AbortSignal): CallSignal | undefined {
  const live = liveOf(state);
  if (live.cancelling !== undefined) return undefined;
  live.inFlight++;
  const controller = new AbortController();
  const rollout = live.controller.signal;
  const onHarness = () => controller.abort(harness.reason);
  const onRollout = () => controller.abort(rollout.reason);
  if (harness.aborted) controller.abort(harness.reason);
  else harness.addEventListener("abort", onHarness, { once: true });
  rollout.addEventListener("abort", onRollout, { once: true });
  return {
    signal: controller.signal,
    release() {
      harness.removeEventListener("abort", onHarness);
      rollout.removeEventListener("abort", onRollout);
    },
  };
}

/** Counts a call out once it is recorded (or refused), letting go of its signal's sources. */
export function leaveCall(state: RolloutState, entered?: CallSignal): void {
  entered?.release();
  const live = state.live;
  if (!live || live.inFlight === 0) return;
  live.inFlight--;
  if (live.inFlight === 0) for (const resolve of live.idle.splice(0)) resolve();
}

/** Why the rollout is being cancelled, or undefined. */
export function cancelling(state: RolloutState): string | undefined {
  return state.live?.cancelling;
}

/**
 * Refuses the rollout's new calls, aborts those in flight and waits (at most `timeoutMs`) until
 * they are recorded. Returns how many were in flight and whether they all ended in time.
 *
 * @example
 * await cancelCalls(state, "the trainer's session timed out", 10_000) // { aborted: 1, drained: true }
 */
export async function cancelCalls(state: RolloutState, reason: string, timeoutMs: number): Promise<{ aborted: number; drained: boolean }> {
  const live = liveOf(state);
  live.cancelling = reason;
  const aborted = live.inFlight;
  if (aborted === 0) return { aborted, drained: true };
  live.controller.abort(new Error(`rollout cancelled: ${reason}`));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drained = await Promise.race([
    new Promise<boolean>((resolve) => live.idle.push(() => resolve(true))),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
  ]).finally(() => clearTimeout(timer));
  return { aborted, drained };
}
