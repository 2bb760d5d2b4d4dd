-- pass@k and pass^k by your own grouping, with the macros stored in the database.
--   forge analyze --data data --db forge.duckdb
--   duckdb forge.duckdb < analytics/notebooks/01-pass-at-k.sql

-- Success threshold for `rollouts.success` (default 1.0).
SET VARIABLE forge_threshold = 1.0;

-- Per task within harness × iteration, then averaged over tasks.
WITH per_task AS (
  SELECT harness, iteration, task_id,
         count(*) FILTER (WHERE valid) AS n,
         count(*) FILTER (WHERE success) AS c
  FROM rollouts
  GROUP BY ALL)
SELECT harness, iteration, count(*) AS tasks,
       avg(pass_at_k(n, c, 1)) AS "pass@1",
       avg(pass_at_k(n, c, 5)) AS "pass@5",
       avg(pass_hat_k(n, c, 5)) AS "pass^5",
       count(pass_at_k(n, c, 5)) AS "tasks with n >= 5"
FROM per_task
GROUP BY ALL
ORDER BY harness, iteration;

-- The hardest tasks: lowest pass@1 with enough samples.
SELECT experiment, task_id, n, c, pass_at_k(n, c, 1) AS "pass@1", mean_reward, harnesses
FROM tasks
WHERE n >= 4
ORDER BY "pass@1", n DESC
LIMIT 20;
