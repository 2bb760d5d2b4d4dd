/** `/healthz` (recorder and upstream health) and `/metrics` (Prometheus text). */
import type { Hono } from "hono";
import { access, constants } from "node:fs/promises";
import type { CallRecorder } from "../capture/call-recorder.ts";
import type { ProxyMetrics } from "../metrics.ts";
import type { PauseGate } from "../state/pause.ts";
import type { UpstreamRouter } from "../upstream/router.ts";
import type { EngineState } from "../engines/check.ts";

/**
 * Mounts the ops routes.
 *
 * @example
 * mountOpsRoutes(app, { recorder, metrics, gate, router, logDir });
 */
export function mountOpsRoutes(
  app: Hono,
  o: { recorder: CallRecorder; metrics: ProxyMetrics; gate: PauseGate; router: UpstreamRouter; logDir: string; engine: EngineState; mode: "train" | "eval" },
): void {
  app.get("/healthz", async (c) => {
    let recorder = o.recorder.health.failure;
    if (recorder === "") {
      // A data dir that became read-only is reported before the next append fails.
      recorder = await access(o.logDir, constants.W_OK).then(
        () => "",
        (error) => `the log directory ${o.logDir} is not writable: ${(error as Error).message}`,
      );
    }
    const upstreams = o.router.upstreams.map((u) => ({ url: u.url, healthy: u.healthy, error: u.lastError || undefined }));
    const e = o.engine;
    // Train-mode calls are refused once an upstream was found unable to return ids.
    const ok = recorder === "" && !(o.mode === "train" && e.refusal !== "");
    const engine = { kind: e.info.kind, version: e.info.version, how: e.info.how, pending: [...e.pending], ...(e.refusal ? { refusal: e.refusal } : {}) };
    return c.json(
      { ok, recorder: recorder === "" ? "ok" : recorder, paused: o.gate.paused, in_flight: o.gate.inFlight, policy_version: o.gate.policyVersion, upstreams, engine },
      ok ? 200 : 503,
    );
  });
  app.get("/metrics", (c) => {
    o.metrics.setWaiting(o.gate.waiting);
    o.metrics.setPolicyVersion(o.gate.policyVersion);
    return c.body(o.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
  });
}
