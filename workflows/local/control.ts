/** A client for the proxy's control API (docs/contracts.md), over HTTP only. */

export type Registration = { rollout_id: string; api_key: string; openai_base_url: string; anthropic_base_url: string; policy_version?: unknown };
export type RolloutStatus = "ok" | "failed" | "infra_error" | "timeout";
export type FinishBody = { reward: number; status: RolloutStatus; verifier_output?: string; error?: string; metrics?: Record<string, number> };

/** How long a control call waits out an admin throttle another client at its address caused. */
const THROTTLED_WAIT_S = 120;

/** The control API answered with an error or could not be reached. */
export class ControlError extends Error {
  override name = "ControlError";
}

export type ControlClient = {
  register(body: { rollout_id: string; experiment: string; iteration: number; task_id: string; group: string; attempt: number; harness: string; labels?: Record<string, string> }): Promise<Registration>;
  finish(rolloutId: string, body: FinishBody): Promise<void>;
  /** POST to any control route (pause, resume: the local training step's weight sync). */
  post(path: string, body: unknown): Promise<unknown>;
};

/**
 * @example
 * const control = controlClient("http://127.0.0.1:8080", adminToken);
 * const reg = await control.register({ rollout_id: "r1", experiment: "quick", iteration: 0, task_id: "a", group: "a@i0", attempt: 0, harness: "forge-react" });
 */
export function controlClient(proxyUrl: string, adminToken?: string): ControlClient {
  const base = proxyUrl.replace(/\/$/, "");
  const post = async (path: string, body: unknown): Promise<unknown> => {
    let response: Response;
    let text: string;
    for (let waited = 0; ; ) {
      try {
        response = await fetch(`${base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", ...(adminToken ? { authorization: `Bearer ${adminToken}` } : {}) },
          body: JSON.stringify(body),
        });
      } catch (error) {
        throw new ControlError(`control API ${base}${path}: cannot connect: ${(error as Error).message}`);
      }
      text = await response.text();
      // Someone else at this address guessed admin tokens (an unsandboxed harness shares
      // loopback with the executor): the right token is refused too until the bucket refills.
      // Wait as told rather than lose a rollout's result to it.
      const retryAfter = Number(response.headers.get("retry-after")) || 1;
      if (response.status !== 429 || !text.includes("admin_attempts_throttled") || waited >= THROTTLED_WAIT_S) break;
      const wait = Math.min(Math.max(1, retryAfter), THROTTLED_WAIT_S - waited);
      await Bun.sleep(wait * 1000);
      waited += wait;
    }
    if (!response.ok) throw new ControlError(`control API POST ${path}: HTTP ${response.status}: ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : {};
  };
  return {
    async register(body) {
      const reg = (await post("/control/rollouts", body)) as Registration;
      if (!reg.rollout_id || !reg.openai_base_url) throw new ControlError(`control API POST /control/rollouts: the answer lacks rollout_id / openai_base_url: ${JSON.stringify(reg)}`);
      return reg;
    },
    async finish(rolloutId, body) {
      await post(`/control/rollouts/${encodeURIComponent(rolloutId)}/finish`, body);
    },
    post,
  };
}
