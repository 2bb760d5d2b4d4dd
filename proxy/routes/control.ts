/**
 * The control API (admin token): rollouts, finish with reward, read, pause/resume.
 *
 * Retries: a retried rollout is a new try with its own id, registered with `retry_of` (the first
 * try's id) and `retry` (n); registering it finishes the earlier tries that never finished as
 * infra_error ("superseded"), so a lost pod can no longer report into the group. Register is not
 * idempotent (a second register of an id is 409: the key is handed out once); finish is, for the
 * same verdict (same status and reward: an executor that did not hear the first answer may ask
 * again), and 409 for a different one.
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import type { z } from "zod";
import { create, RecordSchema, RolloutResultSchema, RolloutSchema, RolloutStatus, toJson, type RolloutResult } from "../../schemas/index.ts";
import { CancelRolloutSchema, FinishRolloutSchema, PauseSchema, RegisterRolloutSchema, ResumeSchema, zodProblems } from "../../schemas/index.ts";
import { cancelCalls } from "../state/cancel.ts";
import { parseJsonObject, readJsonBody } from "../body.ts";
import { ProxyHttpError } from "../errors.ts";
import type { CallRecorder } from "../capture/call-recorder.ts";
import type { SegmentLog } from "../../records/index.ts";
import { keySha256, newApiKey } from "../state/keys.ts";
import { servingLabels } from "../state/serving.ts";
import type { PauseGate } from "../state/pause.ts";
import type { RolloutRegistry, RolloutState } from "../state/rollouts.ts";
import type { LogIndex } from "../state/log-index.ts";
import type { ProxyMetrics } from "../metrics.ts";
import { requireAdmin, type AdminThrottle } from "./auth.ts";
import { trajectoryQuery } from "./trajectory-query.ts";
import type { ConnectionGuard } from "../connections.ts";

export interface ControlRoutesOptions {
  adminToken: string;
  registry: RolloutRegistry;
  recorder: CallRecorder;
  log: SegmentLog;
  /** Where each rollout's records are (state/log-index.ts): the trajectory route reads only its own. */
  index: LogIndex;
  gate: PauseGate;
  metrics: ProxyMetrics;
  /**
   * Base URL handed to harnesses: `--public-url`, else the address the proxy listens on. Never
   * the request's Host header, which any client sets (and a harness would then be sent there).
   */
  publicUrl: () => string;
  /** Failed admin attempts, per client address. */
  throttle: AdminThrottle;
  connections: ConnectionGuard;
  /**
   * On a sharded proxy (routes/shards.ts): passes control requests for other shards' rollouts
   * on, after the admin check; and a new rollout id this shard owns.
   */
  shards?: { route: MiddlewareHandler; newRolloutId: () => string };
}

const STATUS = { ok: RolloutStatus.OK, failed: RolloutStatus.FAILED, infra_error: RolloutStatus.INFRA_ERROR, timeout: RolloutStatus.TIMEOUT } as const;

/**
 * Mounts `/control/*` on `app`.
 *
 * @example
 * mountControlRoutes(app, { adminToken, registry, recorder, log, gate, metrics, publicUrl: () => "http://127.0.0.1:8787", throttle, connections });
 */
export function mountControlRoutes(app: Hono, options: ControlRoutesOptions): void {
  const { connections } = options;
  app.use("/control/*", async (c, next) => {
    requireAdmin(c, options.adminToken, options.throttle, connections.clientAddress(c.req.raw));
    // A pause may wait for calls to drain, a finish for an fsync: not an idle connection.
    connections.hold(c.req.raw);
    try {
      await next();
    } finally {
      connections.release(c.req.raw);
    }
  });
  if (options.shards) app.use("/control/*", options.shards.route);
  mountRegister(app, options);
  mountFinish(app, options);
  mountCancel(app, options);
  mountReads(app, options);
  mountPause(app, options);
}

/** POST /control/rollouts: a new rollout (or a retry of one), its key and base URLs. */
function mountRegister(app: Hono, options: ControlRoutesOptions): void {
  const { registry, recorder, gate } = options;
  app.post("/control/rollouts", async (c) => {
    const body = await parsed(c, RegisterRolloutSchema);
    const id = body.rollout_id ?? options.shards?.newRolloutId() ?? `ro-${crypto.randomUUID()}`;
    if (registry.get(id)) throw new ProxyHttpError(409, `rollout "${id}" is already registered (a retry registers a new id with retry_of)`, "invalid_request_error", "rollout_exists", "rollout_id");
    if ((body.retry === undefined) !== (body.retry_of === undefined)) throw new ProxyHttpError(400, "retry and retry_of go together", "invalid_request_error", "invalid_body", "retry_of");
    if (body.retry_of !== undefined) supersedeEarlierTries(options, id, body.retry_of);
    const apiKey = newApiKey();
    // A rollout served by its own upstreams (a trainer's servers) carries their weights' version.
    const version = body.policy_version ?? gate.policyVersion;
    const rollout = create(RolloutSchema, {
      rolloutId: id,
      experiment: body.experiment,
      iteration: body.iteration ?? 0,
      taskId: body.task_id,
      group: body.group ?? `${body.task_id}@v${version}`,
      attempt: body.attempt ?? 0,
      harness: body.harness ?? "",
      createdUnixMs: Date.now(),
      policyVersion: version,
      labels: { ...body.labels, ...servingLabels(body.upstreams, body.sampling) },
      keySha256: keySha256(apiKey),
      retryOf: body.retry_of ?? "",
      retry: body.retry ?? 0,
    });
    appendOr503(recorder, create(RecordSchema, { kind: { case: "rollout", value: rollout } }));
    registry.add(rollout);
    const origin = options.publicUrl().replace(/\/+$/, "");
    return c.json(
      {
        rollout_id: id,
        api_key: apiKey,
        openai_base_url: `${origin}/r/${id}/v1`,
        anthropic_base_url: `${origin}/r/${id}`,
        policy_version: version,
      },
      201,
    );
  });
}

/**
 * Before try `id` of rollout `firstId` registers: a try that already has a verdict (not an
 * infra_error) means the rollout is done and the retry must not run (409 rollout_finished,
 * naming that try); tries that never finished are finished now as superseded infra_errors.
 */
function supersedeEarlierTries(options: ControlRoutesOptions, id: string, firstId: string): void {
  const { registry, recorder } = options;
  const earlier = registry.tries(firstId);
  const done = earlier.find((s) => s.result && s.result.status !== RolloutStatus.INFRA_ERROR);
  if (done) {
    throw new ProxyHttpError(409, `rollout "${firstId}" already finished in try "${done.rollout.rolloutId}" (GET /control/rollouts/${done.rollout.rolloutId} has its result); retry "${id}" is not needed`, "invalid_request_error", "rollout_finished", done.rollout.rolloutId);
  }
  for (const state of earlier) {
    if (state.result) continue;
    const result = create(RolloutResultSchema, {
      rolloutId: state.rollout.rolloutId,
      status: RolloutStatus.INFRA_ERROR,
      finishedUnixMs: Date.now(),
      error: `superseded by retry "${id}" (this try's pod was lost or failed)`,
    });
    appendOr503(recorder, create(RecordSchema, { kind: { case: "rolloutResult", value: result } }));
    state.result = result;
    registry.forgetHistory(state);
  }
}

/**
 * A rollout's result, finish's or cancel's (`what` names it in the error): appended, and on
 * stable storage before anyone hears the rollout ended; only then is it the rollout's result.
 */
async function commitResult(options: ControlRoutesOptions, state: RolloutState, result: RolloutResult, what: string): Promise<void> {
  appendOr503(options.recorder, create(RecordSchema, { kind: { case: "rolloutResult", value: result } }));
  try {
    await options.log.sync();
  } catch (error) {
    throw new ProxyHttpError(503, `${what} was written but could not be fsynced: ${(error as Error).message}`, "service_unavailable", "recorder_unavailable");
  }
  state.result = result;
  options.registry.forgetHistory(state);
}

/** The registered rollout `id`, or 404. */
function rolloutOr404(registry: RolloutRegistry, id: string): RolloutState {
  const state = registry.get(id);
  if (!state) throw new ProxyHttpError(404, `unknown rollout "${id}"`, "not_found_error", "rollout_not_found");
  return state;
}

/** POST /control/rollouts/:id/finish: the verdict and reward, synced (the same verdict again is 200). */
function mountFinish(app: Hono, options: ControlRoutesOptions): void {
  app.post("/control/rollouts/:id/finish", async (c) => {
    const id = c.req.param("id");
    const state = rolloutOr404(options.registry, id);
    const body = await parsed(c, FinishRolloutSchema);
    if (state.result) {
      // The same verdict again is the executor repeating a finish whose answer it did not get.
      if (state.result.status === STATUS[body.status] && state.result.reward === body.reward) return c.json({ rollout_id: id, calls: state.calls, synced: true, repeated: true });
      const was = `${RolloutStatus[state.result.status]?.toLowerCase() ?? state.result.status}, reward ${state.result.reward}${state.result.error ? `: ${state.result.error}` : ""}`;
      throw new ProxyHttpError(409, `rollout "${id}" is already finished (${was})`, "invalid_request_error", "rollout_finished");
    }
    const result = create(RolloutResultSchema, {
      rolloutId: id,
      reward: body.reward,
      status: STATUS[body.status],
      verifierOutput: body.verifier_output ?? "",
      finishedUnixMs: Date.now(),
      error: body.error ?? "",
      metrics: body.metrics ?? {},
    });
    await commitResult(options, state, result, "the result");
    return c.json({ rollout_id: id, calls: state.calls, synced: true });
  });
}

/**
 * Cancel (a trainer's session timed out or failed): new calls 409 at once, calls in flight
 * aborted and recorded, then the result (status infra_error or timeout, metric
 * `forge.cancelled` 1) is written and synced, so no call of the rollout follows it in the
 * log. A rollout that already has its result keeps it (200, `cancelled: false`).
 */
function mountCancel(app: Hono, options: ControlRoutesOptions): void {
  app.post("/control/rollouts/:id/cancel", async (c) => {
    const id = c.req.param("id");
    const state = rolloutOr404(options.registry, id);
    const body = await parsed(c, CancelRolloutSchema);
    const finished = () => c.json({ rollout_id: id, cancelled: false, calls: state.calls, result: toJson(RolloutResultSchema, state.result!, { useProtoFieldName: true }) });
    if (state.result) return finished();
    const { aborted, drained } = await cancelCalls(state, body.reason, 10_000);
    if (state.result) return finished(); // a finish that was already writing won
    const result = create(RolloutResultSchema, {
      rolloutId: id,
      reward: 0,
      status: STATUS[body.status ?? "infra_error"],
      finishedUnixMs: Date.now(),
      error: `cancelled: ${body.reason}${drained ? "" : ` (${aborted} call(s) still in flight after 10 s)`}`,
      metrics: { "forge.cancelled": 1 },
    });
    await commitResult(options, state, result, "the cancel");
    return c.json({ rollout_id: id, cancelled: true, calls: state.calls, aborted, drained });
  });
}

/** GET /control/rollouts/:id and its trajectory. */
function mountReads(app: Hono, options: ControlRoutesOptions): void {
  const { registry } = options;
  app.get("/control/rollouts/:id", (c) => {
    const state = rolloutOr404(registry, c.req.param("id"));
    // Proto field names (`rollout_id`, `task_id`), as every other control route answers.
    return c.json({
      rollout: toJson(RolloutSchema, state.rollout, { useProtoFieldName: true }),
      result: state.result ? toJson(RolloutResultSchema, state.result, { useProtoFieldName: true }) : undefined,
      calls: state.calls,
      token_status_counts: state.tokenStatusCounts,
    });
  });

  app.get("/control/rollouts/:id/trajectory", async (c) => {
    const id = c.req.param("id");
    rolloutOr404(registry, id);
    // Loaded on first use: trajectory assembly pulls in the export code, not needed to serve calls.
    const { OVERLONG_POLICIES, selectForTraining, trajectoryOf, trajectoryWithImages } = await import("../../trajectories/index.ts");
    const query = trajectoryQuery(c.req.query(), OVERLONG_POLICIES);
    // Only this rollout's frames, by the log's index. Damage must not stop the online loop: it
    // is skipped with a warning on stderr (the proxy quarantined and reported it at start).
    // ?images=1: each sample's image refs and the images' bytes (the veRL loop's multi_modal_data).
    const records = options.index.recordsOf(id, { skipCorrupt: true });
    const trajectory = (query.images ? await trajectoryWithImages(records, id) : await trajectoryOf(records, id)) ?? { rollout_id: id, samples: [], reward: 0 };
    if (!query.limits) return c.json(trajectory);
    // ?select=1: the samples the trainer trains on, by trajectories' one rule with its settings.
    const { samples, ...selection } = selectForTraining(trajectory.samples, trajectory.reward, query.limits);
    return c.json({ ...trajectory, samples, selection });
  });
}

/** POST /control/pause and /control/resume (the pause gate, state/pause.ts). */
function mountPause(app: Hono, options: ControlRoutesOptions): void {
  const { gate, metrics } = options;
  app.post("/control/pause", async (c) => {
    const body = await parsed(c, PauseSchema, true);
    metrics.setPaused(true);
    const result = await gate.pause(body.timeout_ms);
    return c.json({ paused: true, drained: result.drained, in_flight: gate.inFlight, policy_version: gate.policyVersion });
  });

  app.post("/control/resume", async (c) => {
    const body = await parsed(c, ResumeSchema);
    const released = gate.waiting;
    gate.resume(body.policy_version);
    metrics.setPaused(false);
    return c.json({ paused: false, policy_version: gate.policyVersion, released });
  });
}

async function parsed<S extends z.ZodType>(c: Context, schema: S, emptyOk = false): Promise<z.infer<S>> {
  const raw = c.req.raw;
  const empty = emptyOk && (raw.headers.get("content-length") === "0" || !raw.body);
  const value = empty ? {} : parseJsonObject(await readJsonBody(raw, 1 << 20));
  const result = schema.safeParse(value);
  if (!result.success) throw new ProxyHttpError(400, `invalid ${c.req.method} ${c.req.path} body: ${zodProblems(result.error)}`, "invalid_request_error", "invalid_body");
  return result.data;
}

function appendOr503(recorder: CallRecorder, record: Parameters<CallRecorder["append"]>[0]): void {
  try {
    recorder.append(record);
  } catch (error) {
    throw new ProxyHttpError(503, `cannot record: ${(error as Error).message}`, "service_unavailable", "recorder_unavailable");
  }
}
