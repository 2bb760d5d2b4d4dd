/**
 * The trajectory route's selection parameters: a trainer (the veRL loop's online mode) asks
 * `GET /control/rollouts/:id/trajectory?select=1&…` for the samples it trains on, selected by
 * trajectories' one rule (trajectories/select.ts `selectForTraining`) with its own settings,
 * instead of selecting them itself. A wrong or unknown parameter is a 400 naming it.
 */
// Types only: the route loads trajectories on first use (not needed to serve calls) and hands the policies in.
import type { OverlongPolicy, TrainingLimits } from "../../trajectories/index.ts";
import { ProxyHttpError } from "../errors.ts";

const PARAMS = ["images", "select", "auxiliary", "overlong", "overlong_reward", "max_prompt_length", "max_response_length", "vision", "final_only"] as const;
const SELECTION_ONLY = PARAMS.slice(2);

function bad(param: string, message: string): ProxyHttpError {
  return new ProxyHttpError(400, `GET /control/rollouts/:id/trajectory: ${param} ${message}`, "invalid_request_error", "invalid_query", param);
}

function count(query: Record<string, string>, param: string): number | undefined {
  const raw = query[param];
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1) throw bad(param, `must be a positive whole number of tokens, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

function flag(query: Record<string, string>, param: string): boolean {
  const raw = query[param];
  if (raw === undefined || raw === "0") return false;
  if (raw === "1") return true;
  throw bad(param, `must be 0 or 1, got ${JSON.stringify(raw)}`);
}

/**
 * The selection a trajectory request asks for (undefined without `select=1`), and whether it
 * asks for images.
 *
 * @example
 * trajectoryQuery({ select: "1", overlong: "truncate", max_response_length: "4096" }, OVERLONG_POLICIES).limits?.overlong; // "truncate"
 */
export function trajectoryQuery(query: Record<string, string>, policies: readonly OverlongPolicy[]): { images: boolean; limits?: TrainingLimits } {
  for (const name of Object.keys(query)) {
    if (!(PARAMS as readonly string[]).includes(name)) throw bad(name, `is not a parameter of this route (it takes ${PARAMS.join(", ")})`);
  }
  const images = flag(query, "images");
  if (!flag(query, "select")) {
    const stray = SELECTION_ONLY.find((p) => query[p] !== undefined);
    if (stray) throw bad(stray, "is a selection setting: add select=1 to have the route select the samples");
    return { images };
  }
  const auxiliary = query.auxiliary ?? "drop";
  if (auxiliary !== "drop" && auxiliary !== "keep") throw bad("auxiliary", `must be drop or keep, got ${JSON.stringify(auxiliary)}`);
  const overlong = query.overlong ?? "truncate";
  if (!(policies as readonly string[]).includes(overlong)) throw bad("overlong", `must be one of ${policies.join(", ")}, got ${JSON.stringify(overlong)}`);
  const reward = query.overlong_reward ?? "0";
  const overlongReward = Number(reward);
  if (reward.trim() === "" || !Number.isFinite(overlongReward)) throw bad("overlong_reward", `must be a number, got ${JSON.stringify(reward)}`);
  let vision: TrainingLimits["vision"];
  if (query.vision !== undefined) {
    const ids = query.vision.split(",");
    if (ids.length !== 3 || !ids.every((id) => /^[0-9]+$/.test(id))) throw bad("vision", `must be three token ids (vision start, image pad, vision end) separated by commas, got ${JSON.stringify(query.vision)}`);
    vision = [Number(ids[0]), Number(ids[1]), Number(ids[2])];
  }
  const limits: TrainingLimits = { auxiliary, overlong: overlong as OverlongPolicy, overlongReward, finalOnly: flag(query, "final_only") };
  const maxPromptLength = count(query, "max_prompt_length");
  const maxResponseLength = count(query, "max_response_length");
  if (maxPromptLength !== undefined) limits.maxPromptLength = maxPromptLength;
  if (maxResponseLength !== undefined) limits.maxResponseLength = maxResponseLength;
  if (vision) limits.vision = vision;
  return { images, limits };
}
