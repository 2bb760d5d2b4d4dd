/**
 * Reading a verifier's reward. The verifier writes `reward.txt` (a number) or `reward.json`
 * (`{"reward": n}` or a number) into `$FORGE_LOGS` (Harbor's /logs/verifier: inside the
 * sandbox it is that very path) or into the workspace; otherwise its exit code decides:
 * 0 → 1.0, anything else → 0.0.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export type Reward = { reward: number; source: string };

function fromDir(dir: string): Reward | { error: string } | undefined {
  const json = join(dir, "reward.json");
  if (existsSync(json)) {
    try {
      const value = JSON.parse(readFileSync(json, "utf8")) as unknown;
      const reward = typeof value === "number" ? value : (value as { reward?: unknown })?.reward;
      if (typeof reward === "number" && Number.isFinite(reward)) return { reward, source: json };
      return { error: `${json}: expected a number or {"reward": number}` };
    } catch (error) {
      return { error: `${json}: not JSON: ${(error as Error).message}` };
    }
  }
  const txt = join(dir, "reward.txt");
  if (existsSync(txt)) {
    const text = readFileSync(txt, "utf8").trim();
    const reward = Number(text);
    if (text !== "" && Number.isFinite(reward)) return { reward, source: txt };
    return { error: `${txt}: expected a number, got ${JSON.stringify(text.slice(0, 40))}` };
  }
  return undefined;
}

/**
 * @example
 * readReward({ logsDir, workspace, exitCode: 0 }); // { reward: 1, source: "exit code 0" } when no file was written
 */
export function readReward(options: { logsDir: string; workspace: string; exitCode: number | null }): Reward & { error?: string } {
  for (const dir of [options.logsDir, options.workspace]) {
    const found = fromDir(dir);
    if (!found) continue;
    if ("error" in found) return { reward: 0, source: "invalid reward file", error: found.error };
    return found;
  }
  return { reward: options.exitCode === 0 ? 1 : 0, source: `exit code ${options.exitCode ?? "none (killed)"}` };
}
