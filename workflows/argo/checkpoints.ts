/**
 * veRL's checkpoint folder (`trainer.default_local_dir`): `global_step_N/` per saved step and
 * `latest_checkpointed_iteration.txt`. veRL's own `max_actor_ckpt_to_keep` forgets the saves of
 * earlier processes, and every Argo iteration is a new process, so the workflow prunes here.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

/** The saved steps in `dir`, ascending. */
export function savedSteps(dir: string): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((d) => {
      const m = /^global_step_(\d+)$/.exec(d.name);
      return d.isDirectory() && m ? [Number(m[1])] : [];
    })
    .sort((a, b) => a - b);
}

/**
 * Deletes all but the newest `keep` checkpoints, never the one veRL's tracker names (the next
 * iteration resumes from it). Returns the steps deleted.
 *
 * @example
 * pruneCheckpoints("/data/checkpoints/run-1", 3) // [1, 2] when global_step_1..5 exist
 */
export function pruneCheckpoints(dir: string, keep: number): number[] {
  if (!Number.isInteger(keep) || keep < 1) throw new Error(`keep must be at least 1 (training.keepCheckpoints), got ${keep}`);
  const tracker = join(dir, "latest_checkpointed_iteration.txt");
  const latest = existsSync(tracker) ? Number(readFileSync(tracker, "utf8").trim()) : undefined;
  const steps = savedSteps(dir);
  const doomed = steps.slice(0, Math.max(0, steps.length - keep)).filter((s) => s !== latest);
  for (const step of doomed) rmSync(join(dir, `global_step_${step}`), { recursive: true, force: true });
  return doomed;
}
