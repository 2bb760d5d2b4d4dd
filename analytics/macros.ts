/**
 * The metric macros, callable from any DuckDB session that loads them (`forge analyze --db`
 * stores them in the database file). Definitions and edge cases: docs/metrics.md.
 */

/** `CREATE MACRO` statements, in dependency order. */
export const macroSql: readonly string[] = [
  // Success threshold, settable per session: SET VARIABLE forge_threshold = 0.5;
  `CREATE OR REPLACE MACRO forge_threshold() AS coalesce(getvariable('forge_threshold'), 1.0)::DOUBLE`,
  // A rollout counts towards n unless the infrastructure failed it or it never finished.
  `CREATE OR REPLACE MACRO is_valid(status) AS status IS NOT NULL AND status <> 'infra_error'`,
  `CREATE OR REPLACE MACRO is_success(status, reward, threshold) AS coalesce(status = 'ok' AND reward >= threshold, false)`,
  // Unbiased pass@k (Chen et al. 2021): 1 - C(n-c,k)/C(n,k) as the product
  // 1 - prod_{i=n-c+1}^{n} (1 - k/i), which never forms a binomial. NULL when n < k (undefined),
  // so AVG() leaves such tasks out.
  `CREATE OR REPLACE MACRO pass_at_k(n, c, k) AS CASE
     WHEN n IS NULL OR c IS NULL OR k IS NULL OR k < 1 OR n < k THEN NULL
     WHEN c <= 0 THEN 0.0
     WHEN n - c < k THEN 1.0
     ELSE 1.0 - list_product(list_transform(range(n - c + 1, n + 1), lambda i: 1.0 - k / i))
   END::DOUBLE`,
  // pass^k (tau-bench): C(c,k)/C(n,k) = prod_{i=0}^{k-1} (c-i)/(n-i). NULL when n < k.
  `CREATE OR REPLACE MACRO pass_hat_k(n, c, k) AS CASE
     WHEN n IS NULL OR c IS NULL OR k IS NULL OR k < 1 OR n < k THEN NULL
     WHEN c < k THEN 0.0
     ELSE list_product(list_transform(range(0, k), lambda i: (c - i) / (n - i)))
   END::DOUBLE`,
  // Claw-Eval: s = successes among the task's first k trials (missing trials are failures).
  `CREATE OR REPLACE MACRO claw_pass_at_k(s, k) AS CASE WHEN k IS NULL OR k < 1 THEN NULL WHEN coalesce(s, 0) >= 1 THEN 1.0 ELSE 0.0 END::DOUBLE`,
  `CREATE OR REPLACE MACRO claw_pass_hat_k(s, k) AS CASE WHEN k IS NULL OR k < 1 THEN NULL WHEN coalesce(s, 0) >= k THEN 1.0 ELSE 0.0 END::DOUBLE`,
  // Share with a NULL (not 0/0 = NaN) when nothing was counted.
  `CREATE OR REPLACE MACRO share(part, whole) AS CASE WHEN whole IS NULL OR whole = 0 THEN NULL ELSE part / whole END::DOUBLE`,
];
