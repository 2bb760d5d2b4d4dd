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

/**
 * Counts a call of the rollout in; returns the signal that aborts it on a cancel (with the
 * harness's own), or undefined when the rollout is being cancelled (the call is refused).
 *
 * @example
 * const signal = enterCall(state, request.signal); // later: leaveCall(state)
 */
export function enterCall(state: RolloutState, harness: AbortSignal): AbortSignal | undefined {
  const live = liveOf(state);
  if (live.cancelling !== undefined) return undefined;
  live.inFlight++;
  return AbortSignal.any([harness, live.controller.signal]);
}

/** Counts a call out once it is recorded (or refused). */
export function leaveCall(state: RolloutState): void {
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
