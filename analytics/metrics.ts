/**
 * Grouped metric queries over the views: pass@k / pass^k (unbiased or Claw-Eval), mean reward,
 * behaviour metrics, reward distribution and token budgets.
 */
import type { DuckDBConnection } from "@duckdb/node-api";

export const groupKeys = ["experiment", "iteration", "harness", "policy_version", "task"] as const;
export type GroupKey = (typeof groupKeys)[number];
export type Convention = "unbiased" | "claw";
export type Row = { [column: string]: string | number | boolean | null | Row[] | (string | number | null)[] };

/** `task` is the user's word; the column is `task_id`. */
function column(key: GroupKey): string {
  return key === "task" ? "task_id" : key;
}

/**
 * Validates `--by` values, naming the bad one.
 *
 * @example
 * parseGroupKeys("harness,iteration") // ["harness", "iteration"]
 */
export function parseGroupKeys(text: string | undefined): GroupKey[] {
  if (!text) return [];
  return text.split(",").map((raw) => {
    const key = raw.trim() as GroupKey;
    if (!groupKeys.includes(key)) throw new Error(`--by: unknown key "${raw}"; use any of ${groupKeys.join(", ")}`);
    return key;
  });
}

function selectKeys(by: GroupKey[]): string {
  return by.map((key) => `${column(key)} AS "${key}", `).join("");
}

/** GROUP BY / ORDER BY for the keys; without keys, no row at all (rather than one of NULLs) when empty. */
function groupTail(keys: string): string {
  return keys ? ` GROUP BY ${keys} ORDER BY ${keys}` : " HAVING count(*) > 0";
}

function groupList(by: GroupKey[]): string {
  return by.map(column).join(", ");
}

/**
 * Runs a query and returns plain JS rows: BIGINT counts become numbers, DECIMALs numbers.
 *
 * @example
 * await queryRows(connection, "SELECT count(*) AS n FROM rollouts") // [{ n: 12 }]
 */
export async function queryRows(connection: DuckDBConnection, sql: string): Promise<Row[]> {
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowObjectsJS().map((row) =>
    Object.fromEntries(Object.entries(row).map(([key, value]) => [key, normalize(value)])),
  ) as Row[];
}

function normalize(value: unknown): unknown {
  if (typeof value === "bigint") return Number(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === "object" && "toDouble" in value) return (value as { toDouble(): number }).toDouble();
  return value;
}

export type PassOptions = { by: GroupKey[]; ks: number[]; convention: Convention; threshold: number };

/**
 * SQL for pass@k and pass^k per group: per task (within the group) n valid rollouts and c
 * successes, then the per-task estimator averaged over the group's tasks.
 *
 * @example
 * passKSql({ by: ["harness"], ks: [1, 5], convention: "unbiased", threshold: 1 })
 */
export function passKSql({ by, ks, convention }: PassOptions): string {
  const keys = groupList(by);
  const partition = [...new Set([...by.map(column), "task_id"])].join(", ");
  const perK = ks
    .map((k) =>
      convention === "unbiased"
        ? `avg(pass_at_k(n, c, ${k})) AS "pass@${k}", avg(pass_hat_k(n, c, ${k})) AS "pass^${k}", count(pass_at_k(n, c, ${k})) AS "tasks_scored@${k}"`
        : `avg(claw_pass_at_k(s${k}, ${k})) AS "pass@${k}", avg(claw_pass_hat_k(s${k}, ${k})) AS "pass^${k}", count(*) AS "tasks_scored@${k}"`,
    )
    .join(",\n       ");
  const firstK = convention === "claw" ? ks.map((k) => `, count(*) FILTER (WHERE success AND trial <= ${k}) AS s${k}`).join("") : "";
  // Only Claw-Eval needs each rollout's trial number; the window sort is the costly part.
  const trials =
    convention === "claw"
      ? `SELECT *, CASE WHEN valid THEN row_number() OVER (PARTITION BY ${partition}, valid ORDER BY attempt, created_unix_ms, rollout_id) END AS trial FROM rollouts`
      : "SELECT * FROM rollouts";
  return `WITH trials AS (${trials}),
per_task AS (
  SELECT ${partition}, count(*) FILTER (WHERE valid) AS n, count(*) FILTER (WHERE success) AS c,
         sum(reward) FILTER (WHERE valid) AS reward_sum,
         count(*) FILTER (WHERE status = 'infra_error') AS infra_errors,
         count(*) FILTER (WHERE status IS NULL) AS unfinished${firstK}
  FROM trials GROUP BY ${partition})
SELECT ${selectKeys(by)}count(*) AS tasks, sum(n) AS rollouts, sum(c) AS successes,
       sum(infra_errors) AS infra_errors, sum(unfinished) AS unfinished,
       share(sum(reward_sum), sum(n)) AS mean_reward,
       ${perK}
FROM per_task${groupTail(keys)}`;
}

/**
 * Sets the success threshold for this session's views (`rollouts.success`).
 *
 * @example
 * await setThreshold(connection, 0.5)
 */
export async function setThreshold(connection: DuckDBConnection, threshold: number): Promise<void> {
  if (!Number.isFinite(threshold)) throw new Error(`--threshold must be a number, got ${threshold}`);
  await connection.run(`SET VARIABLE forge_threshold = ${threshold}::DOUBLE`);
}

/**
 * pass@k, pass^k and mean reward per group.
 *
 * @example
 * await passK(connection, { by: ["iteration"], ks: [1, 5], convention: "unbiased", threshold: 1 })
 * // [{ iteration: 0, tasks: 12, rollouts: 96, "pass@1": 0.41, "pass^1": 0.41, ... }]
 */
export async function passK(connection: DuckDBConnection, options: PassOptions): Promise<Row[]> {
  await setThreshold(connection, options.threshold);
  return queryRows(connection, passKSql(options));
}

/**
 * SQL for the behaviour metrics per group (over rollouts that are not infra errors).
 *
 * @example
 * behaviourSql(["harness"]) // SELECT "harness", count(*) AS rollouts, avg(tool_coverage) ...
 */
export function behaviourSql(by: GroupKey[]): string {
  const keys = groupList(by);
  return `WITH b AS (SELECT * FROM rollout_behaviour WHERE status IS DISTINCT FROM 'infra_error')
SELECT ${selectKeys(by)}count(*) AS rollouts,
       avg(tool_coverage) AS tool_coverage,
       share(count(*) FILTER (WHERE self_verified), count(*) FILTER (WHERE edited)) AS self_verification,
       share(sum(errors_recovered), sum(tool_errors)) AS error_recovery,
       avg(plan_completion) AS plan_completion,
       avg(turns) AS turns,
       avg(total_tokens) AS tokens,
       share(sum(shell_calls), sum(tool_calls)) AS shell_share,
       share(sum(ttft_sum), sum(ttft_calls)) AS ttft_ms,
       share(sum(latency_sum), sum(latency_calls)) AS latency_ms
FROM b${groupTail(keys)}`;
}

/**
 * Behaviour metrics per group (definitions: docs/metrics.md).
 *
 * @example
 * await behaviour(connection, ["harness"]) // [{ harness: "codex", tool_coverage: 0.6, self_verification: 0.8, ... }]
 */
export async function behaviour(connection: DuckDBConnection, by: GroupKey[]): Promise<Row[]> {
  return queryRows(connection, behaviourSql(by));
}

/**
 * Reward histogram over valid rollouts: `bins` equal-width bins between the min and max reward,
 * empty bins included.
 *
 * @example
 * await rewardHistogram(connection) // [{ bin: 0, rollouts: 12, lo: 0, hi: 0.1 }, ...]
 */
export async function rewardHistogram(connection: DuckDBConnection, bins = 10): Promise<Row[]> {
  return queryRows(
    connection,
    `WITH v AS (SELECT reward FROM rollouts WHERE valid AND reward IS NOT NULL),
     range_ AS (SELECT min(reward) AS lo, max(reward) AS hi FROM v),
     binned AS (
       SELECT CASE WHEN hi = lo THEN 0 ELSE least(floor((reward - lo) / (hi - lo) * ${bins})::INTEGER, ${bins - 1}) END AS bin
       FROM v, range_),
     -- Every bin, empty ones included (a single bin when all rewards are equal).
     all_bins AS (
       SELECT b.range::INTEGER AS bin, lo, hi FROM range_, range(${bins}) b
       WHERE lo IS NOT NULL AND (hi > lo OR b.range = 0))
     SELECT all_bins.bin, count(binned.bin) AS rollouts,
            lo + (hi - lo) * all_bins.bin / ${bins} AS lo,
            CASE WHEN hi = lo THEN hi ELSE lo + (hi - lo) * (all_bins.bin + 1) / ${bins} END AS hi
     FROM all_bins LEFT JOIN binned USING (bin)
     GROUP BY all_bins.bin, lo, hi ORDER BY all_bins.bin`,
  );
}

/**
 * Token budgets per group: per-rollout total tokens, percentiles.
 *
 * @example
 * await tokenBudgets(connection, ["harness"]) // [{ harness: "codex", p50_tokens: 41000, p95_tokens: 120000, ... }]
 */
export async function tokenBudgets(connection: DuckDBConnection, by: GroupKey[]): Promise<Row[]> {
  const keys = groupList(by);
  return queryRows(
    connection,
    `SELECT ${selectKeys(by)}count(*) AS rollouts,
            avg(prompt_tokens) AS mean_prompt_tokens, avg(completion_tokens) AS mean_completion_tokens,
            quantile_cont(total_tokens, 0.5) AS p50_tokens, quantile_cont(total_tokens, 0.95) AS p95_tokens,
            max(total_tokens) AS max_tokens
     FROM rollout_behaviour WHERE status IS DISTINCT FROM 'infra_error'${groupTail(keys)}`,
  );
}
