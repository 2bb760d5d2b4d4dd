-- pass@k and pass^k by your own grouping, with the macros forge analyze uses (docs/metrics.md).
-- Run it over a data directory, or over a database file written by forge analyze --db:
--   forge sql .forge/runs/quickstart-20260101-120000 < analytics/notebooks/01-pass-at-k.sql
--   forge analyze --data DIR --db forge.duckdb && forge sql forge.duckdb < analytics/notebooks/01-pass-at-k.sql
-- or interactively (forge sql forge.duckdb) and paste one statement at a time.

-- Success is status ok and reward >= the threshold each rollout's experiment recorded
-- (rollouts.threshold); SET VARIABLE forge_threshold = 0.5; overrides it for the session.

-- Per run and harness, the "exclude" convention by hand: the tasks with at least 5 valid trials,
-- the same tasks for every k, and how many they are.
WITH per_task AS (
  SELECT experiment, run, harness, task_id,
         count(*) FILTER (WHERE valid) AS n,
         count(*) FILTER (WHERE success) AS c
  FROM rollouts
  GROUP BY ALL)
SELECT experiment, run, harness, count(*) AS tasks,
       count(*) FILTER (WHERE n >= 5) AS tasks_scored,
       avg(pass_at_k(n, c, 1)) FILTER (WHERE n >= 5) AS "pass@1",
       avg(pass_at_k(n, c, 5)) FILTER (WHERE n >= 5) AS "pass@5",
       avg(pass_hat_k(n, c, 5)) FILTER (WHERE n >= 5) AS "pass^5"
FROM per_task
GROUP BY ALL
ORDER BY ALL;

-- The hardest tasks: lowest pass@1 with enough trials.
SELECT experiment, run, task_id, n, c, pass_at_k(n, c, 1) AS "pass@1", mean_reward, harnesses
FROM tasks
WHERE n >= 4
ORDER BY "pass@1", n DESC
LIMIT 20;

-- Claw-Eval's summary per run (score_summary.py with EXPECTED_TRIALS = 3): every graded trial,
-- whatever its status, padded with 0.0 up to 3, against 0.75 (claw_threshold()).
WITH per_task AS (
  SELECT run, task_id,
         count(*) FILTER (WHERE valid) AS graded,
         count(*) FILTER (WHERE valid AND reward >= claw_threshold()) AS passes,
         count(*) FILTER (WHERE valid AND NOT reward >= claw_threshold()) AS fails,
         coalesce(fsum(reward) FILTER (WHERE valid), 0) AS score_sum
  FROM rollouts
  GROUP BY ALL)
SELECT run, count(*) AS tasks,
       avg(claw_avg_score(score_sum, 3)) AS overall_avg_score,
       avg(claw_avg_pass(score_sum, 3, claw_threshold())::INTEGER) AS avg_pass_rate,
       avg(claw_any_pass(passes, graded, 3, claw_threshold())::INTEGER) AS any_pass_rate,
       avg(claw_all_pass(fails, graded, 3, claw_threshold())::INTEGER) AS all_pass_rate
FROM per_task
GROUP BY run
ORDER BY run;
