/** Who a request is: the rollout of a model route, or the admin of a control route. */
import type { Context } from "hono";
import { ProxyHttpError } from "../errors.ts";
import { presentedKey, secretEquals, keyMatchesSha256 } from "../state/keys.ts";
import type { RolloutRegistry, RolloutState } from "../state/rollouts.ts";

/**
 * The rollout of a model call: from `/r/:rollout/...` (its key must match) or from the key.
 *
 * @example
 * const rollout = resolveRollout(c, registry);
 */
export function resolveRollout(c: Context, registry: RolloutRegistry): RolloutState {
  const key = presentedKey(c.req.raw.headers);
  const id = c.req.param("rollout");
  if (id !== undefined) {
    const state = registry.get(id);
    if (!state) throw new ProxyHttpError(404, `unknown rollout "${id}": register it with POST /control/rollouts first`, "not_found_error", "rollout_not_found");
    if (!key) throw new ProxyHttpError(401, `missing API key for rollout "${id}": send its key as Authorization: Bearer or x-api-key`, "authentication_error", "missing_api_key");
    if (!keyMatchesSha256(key, state.rollout.keySha256)) {
      throw new ProxyHttpError(401, `the API key is not the key of rollout "${id}"`, "authentication_error", "invalid_api_key");
    }
    return state;
  }
  if (!key) throw new ProxyHttpError(401, "missing API key: send the rollout's key as Authorization: Bearer or x-api-key", "authentication_error", "missing_api_key");
  const state = registry.byKey(key);
  if (!state) throw new ProxyHttpError(401, "the API key is not the key of any rollout of this proxy", "authentication_error", "invalid_api_key");
  return state;
}

/**
 * Throws 401 unless the request carries the admin token as a bearer.
 *
 * @example
 * requireAdmin(c, adminToken);
 */
export function requireAdmin(c: Context, adminToken: string): void {
  const auth = c.req.header("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
  if (!match || !secretEquals(match[1]!.trim(), adminToken)) {
    throw new ProxyHttpError(401, "control routes need the admin token as Authorization: Bearer (see --admin-token / FORGE_ADMIN_TOKEN)", "authentication_error", "invalid_admin_token");
  }
}
