-- Behaviour metrics (definitions and their precision/recall: docs/metrics.md) and drill-downs
-- into tool calls. Run: forge sql DIR < analytics/notebooks/02-behaviour.sql

-- Per harness: how agents work, next to whether they succeed, each share with the n it is over.
SELECT harness,
       count(*) AS rollouts,
       avg(success::INTEGER) AS success_rate,
       avg(tool_coverage) AS tool_coverage, count(tool_coverage) AS coverage_n,
       share(count(*) FILTER (WHERE self_verified), count(*) FILTER (WHERE edited)) AS self_verification,
       count(*) FILTER (WHERE edited) AS verification_n,
       share(sum(errors_recovered), sum(tool_errors)) AS error_recovery, sum(tool_errors) AS recovery_n,
       avg(plan_completion) AS plan_completion, count(plan_completion) AS plan_n,
       share(sum(tool_results_known), sum(tool_results)) AS error_signal_share,
       avg(turns) AS turns,
       share(sum(shell_calls), sum(tool_calls)) AS shell_share
FROM rollout_behaviour
WHERE status IS DISTINCT FROM 'infra_error'
GROUP BY harness
ORDER BY harness;

-- Does verifying after the last edit pay off?
SELECT self_verified, count(*) AS rollouts, avg(success::INTEGER) AS success_rate
FROM rollout_behaviour
WHERE edited
GROUP BY self_verified;

-- The most-used tools, what kind they are, how often their result says error (and how often it says anything).
SELECT tool_name, kind, count(*) AS calls,
       avg(is_error::INTEGER) AS error_rate, count(is_error) AS with_error_signal
FROM tool_calls
GROUP BY ALL
ORDER BY calls DESC
LIMIT 25;

-- Files each rollout wrote, and whether they were read, run or tested afterwards.
SELECT w.rollout_id, w.path, w.ordinal AS written_at,
       bool_or(r.ordinal > w.ordinal) AS read_or_run_later
FROM tool_files w
LEFT JOIN tool_files r ON r.rollout_id = w.rollout_id AND r.op IN ('read', 'exec') AND path_match(r.path, w.path)
WHERE w.op = 'write' AND w.path <> '?'
GROUP BY ALL
ORDER BY w.rollout_id, written_at
LIMIT 50;

-- Tool errors never retried with the same intent, with the output the agent saw.
SELECT t.rollout_id, t.ordinal, t.tool_name, t.intents, left(t.result_text, 200) AS output
FROM tool_calls t
WHERE t.is_error AND NOT EXISTS (
  SELECT 1 FROM tool_calls later
  WHERE later.rollout_id = t.rollout_id AND later.ordinal > t.ordinal
    AND later.is_error = false AND len(list_intersect(later.intents, t.intents)) > 0)
ORDER BY t.rollout_id, t.ordinal
LIMIT 50;
