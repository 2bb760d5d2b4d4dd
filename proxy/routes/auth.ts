/** Who a request is: the rollout of a model route, or the admin of a control route. */
import type { Context } from "hono";
import { ProxyHttpError } from "../errors.ts";
import { presentedKey, secretEquals, keyMatchesSha256 } from "../state/keys.ts";
import type { RolloutRegistry, RolloutState } from "../state/rollouts.ts";
import { cancelling } from "../state/cancel.ts";

/**
 * The rollout of a model call: from `/r/:rollout/...` (its key must match) or from the key. A
 * rollout that has finished takes no more calls (409): what a harness sends after its
 * rollout's result is in would be recorded after the reward it can no longer change.
 *
 * @example
 * const rollout = resolveRollout(c, registry);
 */
export function resolveRollout(c: Context, registry: RolloutRegistry): RolloutState {
  const key = presentedKey(c.req.raw.headers);
  const id = c.req.param("rollout");
  let state: RolloutState | undefined;
  if (id !== undefined) {
    state = registry.get(id);
    if (!state) throw new ProxyHttpError(404, `unknown rollout "${id}": register it with POST /control/rollouts first`, "not_found_error", "rollout_not_found");
    if (!key) throw new ProxyHttpError(401, `missing API key for rollout "${id}": send its key as Authorization: Bearer or x-api-key`, "authentication_error", "missing_api_key");
    if (!keyMatchesSha256(key, state.rollout.keySha256)) {
      throw new ProxyHttpError(401, `the API key is not the key of rollout "${id}"`, "authentication_error", "invalid_api_key");
    }
  } else {
    if (!key) throw new ProxyHttpError(401, "missing API key: send the rollout's key as Authorization: Bearer or x-api-key", "authentication_error", "missing_api_key");
    state = registry.byKey(key);
    if (!state) throw new ProxyHttpError(401, "the API key is not the key of any rollout of this proxy", "authentication_error", "invalid_api_key");
  }
  refuseFinished(state);
  return state;
}

/**
 * Throws 409 when the rollout's result is in (it was finished): its calls are over.
 *
 * @example
 * refuseFinished(state); // throws ProxyHttpError 409 rollout_finished once state.result is set
 */
export function refuseFinished(state: RolloutState): void {
  const why = cancelling(state);
  if (why !== undefined && !state.result) {
    throw new ProxyHttpError(409, `rollout "${state.rollout.rolloutId}" was cancelled (${why}): it takes no more model calls`, "invalid_request_error", "rollout_finished");
  }
  const result = state.result;
  if (!result) return;
  const at = result.finishedUnixMs > 0 ? ` at ${new Date(result.finishedUnixMs).toISOString()}` : "";
  throw new ProxyHttpError(
    409,
    `rollout "${state.rollout.rolloutId}" finished${at}: it takes no more model calls (register a new rollout to go on)`,
    "invalid_request_error",
    "rollout_finished",
  );
}

/** Failed admin attempts allowed per client address: a burst, then one more per `refillMs`. */
export interface AdminThrottleOptions {
  /** Failed attempts in a row before an address is made to wait. Default 10. */
  burst?: number;
  /** One more failed attempt is allowed per this many ms. Default 1000. */
  refillMs?: number;
  /** Addresses tracked at once (the oldest are forgotten). Default 10000. */
  maxAddresses?: number;
  now?: () => number;
}

export interface AdminThrottle {
  /** Seconds `address` must wait before its next attempt is looked at (0: go ahead). */
  wait(address: string): number;
  /** Counts a failed attempt of `address`. */
  failed(address: string): void;
}

/**
 * A token bucket per client address over failed admin attempts. While an address's bucket is
 * empty, all its control requests get 429, the right token included: were the right token let
 * through, the 429s would tell an attacker which guess was right at full speed.
 *
 * @example
 * const throttle = createAdminThrottle();
 * if (throttle.wait("10.0.0.7") > 0) refuse(); else if (!ok) throttle.failed("10.0.0.7");
 */
export function createAdminThrottle(options: AdminThrottleOptions = {}): AdminThrottle {
  const burst = options.burst ?? 10;
  const refillMs = options.refillMs ?? 1000;
  const maxAddresses = options.maxAddresses ?? 10_000;
  const now = options.now ?? Date.now;
  // address → the time its bucket would be full again (each failure pushes it refillMs on).
  const fullAt = new Map<string, number>();
  const debt = (address: string, t: number): number => Math.max(0, (fullAt.get(address) ?? t) - t);
  return {
    wait(address) {
      const t = now();
      const owed = debt(address, t);
      if (owed === 0) fullAt.delete(address);
      // Empty once `burst` failures are outstanding: wait until one has been refilled.
      const over = owed - (burst - 1) * refillMs;
      return over > 0 ? Math.ceil(over / 1000) : 0;
    },
    failed(address) {
      const t = now();
      const next = t + debt(address, t) + refillMs;
      fullAt.delete(address);
      fullAt.set(address, next);
      if (fullAt.size > maxAddresses) fullAt.delete(fullAt.keys().next().value!);
    },
  };
}

/**
 * Throws unless the request carries the admin token as a bearer: 401, or 429 with Retry-After
 * once its address has failed too often (see createAdminThrottle).
 *
 * @example
 * requireAdmin(c, adminToken, throttle, "127.0.0.1");
 */
export function requireAdmin(c: Context, adminToken: string, throttle?: AdminThrottle, address = "local"): void {
  const wait = throttle?.wait(address) ?? 0;
  if (wait > 0) {
    throw new ProxyHttpError(
      429,
      `too many failed admin-token attempts from ${address}: control requests from it are refused for ${wait} s`,
      "rate_limit_error",
      "admin_attempts_throttled",
      null,
      { "retry-after": String(wait) },
    );
  }
  const auth = c.req.header("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
  if (!match || !secretEquals(match[1]!.trim(), adminToken)) {
    throttle?.failed(address);
    throw new ProxyHttpError(401, "control routes need the admin token as Authorization: Bearer (see --admin-token / FORGE_ADMIN_TOKEN)", "authentication_error", "invalid_admin_token");
  }
}
