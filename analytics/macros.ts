/**
 * The metric macros, callable from any DuckDB session that loads them (`forge analyze --db`
 * stores them in the database file, `forge sql` defines them). Definitions and edge cases:
 * docs/metrics.md.
 */

/** `CREATE MACRO` statements, in dependency order. */
export const macroSql: readonly string[] = [
  // A success threshold set for this session overrides the one each rollout's experiment
  // recorded: SET VARIABLE forge_threshold = 0.5; RESET VARIABLE forge_threshold to go back.
  `CREATE OR REPLACE MACRO forge_threshold() AS getvariable('forge_threshold')::DOUBLE`,
  // Claw-Eval's score_summary.py passes a trial at task_score >= 0.75 (PASS_THRESHOLD).
  `CREATE OR REPLACE MACRO claw_threshold() AS coalesce(getvariable('forge_threshold'), 0.75)::DOUBLE`,
  // A missing-trial convention set for this session overrides the experiments' (exclude | fail).
  `CREATE OR REPLACE MACRO forge_missing_trials() AS getvariable('forge_missing_trials')::VARCHAR`,
  // One label of a rollout (labels_json is the Rollout record's labels map as JSON).
  `CREATE OR REPLACE MACRO label_of(labels_json, key) AS json_extract_string(labels_json, '$."' || key || '"')`,
  // The run: the label forge run records, else the run prefix of the executors' rollout ids
  // (<run>.i<iteration>.<task>.<attempt>, with .r<retry> for an Argo retry), else NULL.
  `CREATE OR REPLACE MACRO run_of(rollout_id, labels_json) AS coalesce(
     label_of(labels_json, 'openforge.dev/run'),
     nullif(regexp_extract(rollout_id, '^(.*)\\.i[0-9]+\\.[A-Za-z0-9_-]*\\.[0-9]+(\\.r[0-9]+)?$', 1), ''))`,
  // A rollout counts towards n unless the infrastructure failed it or it never finished.
  `CREATE OR REPLACE MACRO is_valid(status) AS status IS NOT NULL AND status <> 'infra_error'`,
  `CREATE OR REPLACE MACRO is_success(status, reward, threshold) AS coalesce(status = 'ok' AND reward >= threshold, false)`,
  // Unbiased pass@k (Chen et al. 2021): 1 - C(n-c,k)/C(n,k) as the product
  // 1 - prod_{i=n-c+1}^{n} (1 - k/i), which never forms a binomial. NULL when n < k (undefined).
  `CREATE OR REPLACE MACRO pass_at_k(n, c, k) AS CASE
     WHEN n IS NULL OR c IS NULL OR k IS NULL OR k < 1 OR n < k THEN NULL
     WHEN c <= 0 THEN 0.0
     WHEN n - c < k THEN 1.0
     ELSE 1.0 - list_product(list_transform(range((n - c + 1)::BIGINT, (n + 1)::BIGINT), lambda i: 1.0 - k / i))
   END::DOUBLE`,
  // pass^k (tau-bench): C(c,k)/C(n,k) = prod_{i=0}^{k-1} (c-i)/(n-i). NULL when n < k.
  `CREATE OR REPLACE MACRO pass_hat_k(n, c, k) AS CASE
     WHEN n IS NULL OR c IS NULL OR k IS NULL OR k < 1 OR n < k THEN NULL
     WHEN c < k THEN 0.0
     ELSE list_product(list_transform(range(0, k::BIGINT), lambda i: (c - i) / (n - i)))
   END::DOUBLE`,
  // Claw-Eval (score_summary.py): a task's scores are its graded trials' scores padded with 0.0
  // up to k (EXPECTED_TRIALS). graded = trials with a score, passes / fails = graded trials at or
  // above / below the threshold, score_sum = the sum of graded scores.
  `CREATE OR REPLACE MACRO claw_avg_score(score_sum, k) AS (coalesce(score_sum, 0) / k)::DOUBLE`,
  `CREATE OR REPLACE MACRO claw_avg_pass(score_sum, k, threshold) AS coalesce(score_sum, 0) / k >= threshold`,
  `CREATE OR REPLACE MACRO claw_any_pass(passes, graded, k, threshold) AS passes > 0 OR (graded < k AND 0.0 >= threshold)`,
  `CREATE OR REPLACE MACRO claw_all_pass(fails, graded, k, threshold) AS fails = 0 AND (graded >= k OR 0.0 >= threshold)`,
  // Paths as tools name them: "./a.py", "a.py" and "/work/app/a.py" are the same file.
  `CREATE OR REPLACE MACRO norm_path(p) AS regexp_replace(p, '^(\\./)+', '')`,
  `CREATE OR REPLACE MACRO path_match(a, b) AS a = b OR ends_with(a, '/' || b) OR ends_with(b, '/' || a)`,
  // Share with a NULL (not 0/0 = NaN) when nothing was counted.
  `CREATE OR REPLACE MACRO share(part, whole) AS CASE WHEN whole IS NULL OR whole = 0 THEN NULL ELSE part / whole END::DOUBLE`,
];
