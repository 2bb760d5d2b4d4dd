/**
 * Control requests on a sharded proxy (proxy/shards.ts), after the admin check: a shard answers
 * for the rollouts it owns and passes the rest on, so an executor may talk to any shard (a
 * Service in front of them):
 *
 * - `POST /control/rollouts` goes to the owner of the rollout's first try (`retry_of`, else
 *   `rollout_id`); its answer, base URLs on the owner, comes back as is. Without `rollout_id`
 *   the shard that got it registers the rollout under an id it owns.
 * - `/control/rollouts/{id}…` is answered where the rollout is: here, else its hashed owner,
 *   else (a retry's id hashes elsewhere than its first try) the other shards in turn.
 * - `POST /control/pause` and `/control/resume` hold or release every shard: the weight sync
 *   must not swap weights under a shard that still serves. A pause one shard refuses is undone
 *   on the others and answered 503.
 *
 * A request passed on carries `x-forge-shard-forwarded`; the shard that gets it answers it
 * itself (never passes it on again).
 */
import type { Context, MiddlewareHandler } from "hono";
import { ProxyHttpError } from "../errors.ts";
import type { RolloutRegistry } from "../state/rollouts.ts";
import type { PauseGate } from "../state/pause.ts";
import { shardOf, type ShardOptions } from "../shards.ts";

export const FORWARDED_HEADER = "x-forge-shard-forwarded";
/** Set on answers to name the shard that gave them. */
export const SHARD_HEADER = "x-forge-shard";

type Forwarded = { status: number; body: ArrayBuffer; contentType: string; shard: number };

/**
 * The middleware for `/control/*` (mounted by mountControlRoutes after the admin check).
 *
 * @example
 * app.use("/control/*", shardRouting({ index: 0, count: 2, urls }, registry));
 */
export function shardRouting(shards: ShardOptions, registry: RolloutRegistry, gate: PauseGate): MiddlewareHandler {
  const send = async (request: { method: string; path: string; headers: (name: string) => string | undefined }, shard: number, body: ArrayBuffer | undefined): Promise<Forwarded> => {
    const headers = new Headers();
    for (const name of ["authorization", "content-type", "x-api-key"]) {
      const value = request.headers(name);
      if (value) headers.set(name, value);
    }
    headers.set(FORWARDED_HEADER, String(shards.index));
    let response: Response;
    try {
      response = await fetch(`${shards.urls[shard]}${request.path}`, { method: request.method, headers, ...(body ? { body } : {}), signal: AbortSignal.timeout(10 * 60_000) });
    } catch (error) {
      const message = `shard ${shard} (${shards.urls[shard]}) is unreachable: ${(error as Error).message}`;
      return { status: 502, body: new TextEncoder().encode(JSON.stringify({ error: { message, code: "shard_unreachable" } })).buffer as ArrayBuffer, contentType: "application/json", shard };
    }
    return { status: response.status, body: await response.arrayBuffer(), contentType: response.headers.get("content-type") ?? "application/json", shard };
  };
  const forward = (c: Context, shard: number, body: ArrayBuffer | undefined) => {
    const url = new URL(c.req.url);
    return send({ method: c.req.method, path: `${url.pathname}${url.search}`, headers: (name) => c.req.header(name) }, shard, body);
  };
  const answer = (f: Forwarded) => new Response(f.body, { status: f.status, headers: { "content-type": f.contentType, [SHARD_HEADER]: String(f.shard) } });
  const bodyOf = async (c: Context) => (c.req.method === "GET" || c.req.method === "HEAD" ? undefined : await c.req.raw.clone().arrayBuffer());
  const text = (f: Forwarded) => new TextDecoder().decode(f.body);

  return async (c, next) => {
    c.header(SHARD_HEADER, String(shards.index));
    if (shards.count === 1 || c.req.header(FORWARDED_HEADER) !== undefined) return next();
    const path = c.req.path;
    if (path === "/control/rollouts" && c.req.method === "POST") {
      const body = await bodyOf(c);
      let key: string | undefined;
      try {
        const parsed = JSON.parse(new TextDecoder().decode(body)) as { rollout_id?: unknown; retry_of?: unknown };
        const candidate = parsed.retry_of ?? parsed.rollout_id;
        if (typeof candidate === "string") key = candidate;
      } catch {
        // Not JSON: the route itself answers 400.
      }
      const owner = key === undefined ? shards.index : shardOf(key, shards.count);
      if (owner === shards.index) return next();
      return answer(await forward(c, owner, body));
    }
    const byId = /^\/control\/rollouts\/([^/]+)(\/.*)?$/.exec(path);
    if (byId) {
      const id = decodeURIComponent(byId[1]!);
      if (registry.get(id)) return next();
      const body = await bodyOf(c);
      const owner = shardOf(id, shards.count);
      const order = [owner, ...Array.from({ length: shards.count }, (_, i) => i).filter((i) => i !== owner)].filter((i) => i !== shards.index);
      for (const shard of order) {
        const reply = await forward(c, shard, body);
        if (reply.status !== 404) return answer(reply);
      }
      return next();
    }
    if ((path === "/control/pause" || path === "/control/resume") && c.req.method === "POST") {
      const body = await bodyOf(c);
      const others = Array.from({ length: shards.count }, (_, i) => i).filter((i) => i !== shards.index);
      const peers = Promise.all(others.map((shard) => forward(c, shard, body)));
      const versionBefore = gate.policyVersion;
      await next();
      const replies = await peers;
      const local = c.res.status < 300 ? ((await c.res.clone().json()) as Record<string, unknown>) : undefined;
      const failed = replies.filter((r) => r.status >= 300);
      if (!local || failed.length > 0) {
        const pause = path === "/control/pause";
        if (pause) {
          // Undone where it took: each shard resumed at the version it had.
          if (local) gate.resume(versionBefore);
          for (const reply of replies.filter((r) => r.status < 300)) {
            const version = (JSON.parse(text(reply)) as { policy_version?: number }).policy_version ?? 0;
            await send({ method: "POST", path: "/control/resume", headers: (name) => c.req.header(name) ?? (name === "content-type" ? "application/json" : undefined) }, reply.shard, new TextEncoder().encode(JSON.stringify({ policy_version: version })).buffer as ArrayBuffer);
          }
        }
        const why = failed.map((r) => `shard ${r.shard} (${shards.urls[r.shard]}): HTTP ${r.status} ${text(r).slice(0, 300)}`);
        if (!local) why.unshift(`shard ${shards.index}: HTTP ${c.res.status}`);
        throw new ProxyHttpError(503, `${pause ? "pause" : "resume"} did not reach every proxy shard${pause ? " (undone on the others)" : ""}: ${why.join("; ")}`, "service_unavailable", "shard_failed");
      }
      const all = [local, ...replies.map((r) => JSON.parse(text(r)) as Record<string, unknown>)];
      const merged: Record<string, unknown> = { ...local, shards: shards.count };
      if (path === "/control/pause") {
        merged.drained = all.every((r) => r.drained === true);
        merged.in_flight = all.reduce((n, r) => n + Number(r.in_flight ?? 0), 0);
      } else {
        merged.released = all.reduce((n, r) => n + Number(r.released ?? 0), 0);
      }
      c.res = Response.json(merged, { headers: { [SHARD_HEADER]: String(shards.index) } });
      return;
    }
    return next();
  };
}
