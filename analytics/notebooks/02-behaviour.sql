-- Behaviour metrics (definitions: docs/metrics.md) and drill-downs into tool calls.

-- Per harness: how agents work, next to whether they succeed.
SELECT harness,
       count(*) AS rollouts,
       avg(success::INTEGER) AS success_rate,
       avg(tool_coverage) AS tool_coverage,
       share(count(*) FILTER (WHERE self_verified), count(*) FILTER (WHERE edited)) AS self_verification,
       share(sum(errors_recovered), sum(tool_errors)) AS error_recovery,
       avg(plan_completion) AS plan_completion,
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

-- The most-used tools, how often they fail, and what kind they are.
SELECT tool_name, kind, count(*) AS calls, avg(is_error::INTEGER) AS error_rate
FROM tool_calls
GROUP BY ALL
ORDER BY calls DESC
LIMIT 25;

-- Tool errors that were never recovered, with the output the agent saw.
SELECT t.rollout_id, t.ordinal, t.tool_name, left(t.result_text, 200) AS output
FROM tool_calls t
WHERE t.is_error AND NOT EXISTS (
  SELECT 1 FROM tool_calls later
  WHERE later.rollout_id = t.rollout_id AND later.tool_name = t.tool_name
    AND later.ordinal > t.ordinal AND later.has_result AND NOT later.is_error)
ORDER BY t.rollout_id, t.ordinal
LIMIT 50;
