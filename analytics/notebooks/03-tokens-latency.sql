-- Token budgets and serving latency. Run: forge sql DIR < analytics/notebooks/03-tokens-latency.sql

-- Per-rollout token budgets by harness and iteration.
SELECT harness, iteration,
       quantile_cont(total_tokens, 0.5) AS p50_tokens,
       quantile_cont(total_tokens, 0.95) AS p95_tokens,
       max(total_tokens) AS max_tokens,
       avg(turns) AS turns
FROM rollout_behaviour
GROUP BY ALL
ORDER BY harness, iteration;

-- Latency and time to first token per model and protocol (streamed calls for TTFT).
SELECT model, protocol, count(*) AS calls,
       quantile_cont(latency_ms, 0.5) AS p50_latency_ms,
       quantile_cont(latency_ms, 0.95) AS p95_latency_ms,
       quantile_cont(ttft_ms, 0.5) FILTER (WHERE stream) AS p50_ttft_ms,
       count(*) FILTER (WHERE status <> 'ok') AS failed_calls
FROM calls
GROUP BY ALL
ORDER BY calls DESC;

-- Reward vs tokens spent (buckets of 20k tokens, the last open-ended): are longer rollouts better?
SELECT least(total_tokens // 20000, 9) * 20000 AS token_bucket, count(*) AS rollouts, avg(reward) AS mean_reward
FROM rollout_behaviour
WHERE status IS DISTINCT FROM 'infra_error'
GROUP BY ALL
ORDER BY token_bucket;
