/**
 * Pause/resume for weight syncs: while paused, new model calls wait (up to a bound, then 429
 * with Retry-After); pause resolves once the calls in flight have drained; resume releases
 * the waiting calls under the new policy version.
 */
import { ProxyHttpError } from "../errors.ts";

export interface PauseGate {
  readonly paused: boolean;
  readonly inFlight: number;
  readonly waiting: number;
  policyVersion: number;
  /** Waits while paused; returns the policy version the call runs under. Throws 429 past the bound. */
  enter(signal?: AbortSignal): Promise<number>;
  /** A call that entered has finished. */
  leave(): void;
  /** Pauses; resolves with whether in-flight calls drained within `timeoutMs`. */
  pause(timeoutMs?: number): Promise<{ drained: boolean; inFlight: number }>;
  resume(policyVersion?: number): void;
}

/**
 * A gate; `boundMs` is how long a call may wait while paused.
 *
 * @example
 * const gate = createPauseGate({ boundMs: 60_000 });
 * const version = await gate.enter();
 * try { ... } finally { gate.leave(); }
 */
export function createPauseGate(options: { boundMs: number; policyVersion?: number }): PauseGate {
  let paused = false;
  let inFlight = 0;
  let waiters: { resolve: () => void }[] = [];
  let drainWaiters: (() => void)[] = [];

  const gate: PauseGate = {
    get paused() {
      return paused;
    },
    get inFlight() {
      return inFlight;
    },
    get waiting() {
      return waiters.length;
    },
    policyVersion: options.policyVersion ?? 0,
    async enter(signal) {
      if (paused) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const waiter = { resolve: () => {} };
        const released = await new Promise<boolean>((resolve) => {
          waiter.resolve = () => resolve(true);
          waiters.push(waiter);
          timer = setTimeout(() => resolve(false), options.boundMs);
          signal?.addEventListener("abort", () => resolve(false), { once: true });
        });
        clearTimeout(timer);
        waiters = waiters.filter((w) => w !== waiter);
        if (!released) {
          const retryAfter = Math.max(1, Math.ceil(options.boundMs / 1000));
          throw new ProxyHttpError(
            429,
            `the proxy is paused for a weight sync and held this call for ${options.boundMs} ms; retry after ${retryAfter} s`,
            "rate_limit_error",
            "paused",
            null,
            { "retry-after": String(retryAfter) },
          );
        }
      }
      inFlight++;
      return gate.policyVersion;
    },
    leave() {
      inFlight--;
      if (inFlight === 0) {
        const list = drainWaiters;
        drainWaiters = [];
        for (const resolve of list) resolve();
      }
    },
    async pause(timeoutMs = 600_000) {
      paused = true;
      if (inFlight === 0) return { drained: true, inFlight: 0 };
      const drained = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        drainWaiters.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      return { drained, inFlight };
    },
    resume(policyVersion) {
      if (policyVersion !== undefined) gate.policyVersion = policyVersion;
      paused = false;
      const list = waiters;
      waiters = [];
      for (const w of list) w.resolve();
    },
  };
  return gate;
}
