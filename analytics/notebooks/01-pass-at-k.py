# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # pass@k and pass^k per iteration
#
# Reads a database written by `forge analyze --data DIR --db forge.duckdb` with DuckDB's Python
# API and recomputes, from the rollouts alone, the figures `forge analyze` prints: per experiment,
# run and iteration, pass@k and pass^k (unbiased estimators, exact binomials here), mean reward and
# the task counts, under each experiment's recorded k, success threshold and missing-trial
# convention (definitions: docs/metrics.md). Then the curves over k and over iterations.
#
# Set `db` below (or pass it as a papermill parameter) and run all cells.

# %% tags=["parameters"]
db = "forge.duckdb"
# k values; None: the experiments' recorded metrics.k, as forge analyze does.
ks = None
# When set, the figures are written there as JSON (CI compares them with forge analyze --json).
figures_out = None

# %%
import json
from math import comb

import duckdb
import matplotlib.pyplot as plt
import pandas as pd

con = duckdb.connect(db, read_only=True)
rollouts = con.sql(
    """SELECT rollout_id, experiment, run, iteration, task_id, attempt, harness, policy_version,
              status, reward, threshold, recorded_missing_trials, recorded_ks, planned_k
       FROM rollouts"""
).df()
print(f"{len(rollouts)} rollouts, {rollouts.task_id.nunique()} tasks, {rollouts.run.nunique()} runs")

# %% [markdown]
# ## The outcome of each rollout
# valid: finished and not an infra error. success: valid, status `ok` and reward ≥ the threshold
# its experiment recorded. score: the reward of an `ok` rollout, 0 for `failed` / `timeout`.

# %%
r = rollouts.copy()
r["valid"] = r.status.notna() & (r.status != "infra_error")
r["success"] = r.valid & (r.status == "ok") & (r.reward >= r.threshold)
r["score"] = r.reward.where(r.status == "ok", 0.0).where(r.valid)
if ks is None:
    recorded = sorted({int(k) for row in r.recorded_ks.dropna() for k in row if k is not None and k >= 1})
    ks = recorded or [1]
kmax = max(ks)
print("k =", ks)


# %% [markdown]
# ## Estimators
# Per task: n valid trials (under `fail`, at least the trials planned), c successes.
# pass@k = 1 − C(n−c, k)/C(n, k) (Chen et al. 2021); pass^k = C(c, k)/C(n, k) (tau-bench).


# %%
def pass_at_k(n, c, k):
    return None if n < k else 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n, c, k):
    return None if n < k else comb(c, k) / comb(n, k)


def per_task(frame, keys):
    """Trials and successes per task within each group; planned trials counted per run."""
    cols = list(dict.fromkeys(keys + ["task_id"]))
    runs = frame.groupby(cols + ["run"] if "run" not in cols else cols, dropna=False).apply(
        lambda g: pd.Series(
            {
                "registered": len(g),
                "n": int(g.valid.sum()),
                "c": int(g.success.sum()),
                "score_sum": float(g.score[g.valid].sum()),
                "infra_errors": int((g.status == "infra_error").sum()),
                "unfinished": int(g.status.isna().sum()),
                "planned": max(int(g.attempt.max()) + 1, int(g.planned_k.fillna(0).max())),
                "convention": g.recorded_missing_trials.dropna().min() if g.recorded_missing_trials.notna().any() else None,
            }
        ),
        include_groups=False,
    ).reset_index()
    tasks = runs.groupby(cols, dropna=False).agg(
        registered=("registered", "sum"), n=("n", "sum"), c=("c", "sum"), score_sum=("score_sum", "sum"),
        infra_errors=("infra_errors", "sum"), unfinished=("unfinished", "sum"), planned=("planned", "sum"),
        convention=("convention", lambda s: s.dropna().min() if s.notna().any() else None),
    ).reset_index()
    thresholds = frame.groupby(cols, dropna=False).threshold.agg(["min", "max"]).reset_index()
    tasks = tasks.merge(thresholds, on=cols, how="left")
    tasks["convention"] = tasks.convention.fillna("exclude")
    tasks["trials"] = tasks.apply(lambda t: max(t.n, t.planned) if t.convention == "fail" else t.n, axis=1)
    return tasks


def pass_table(frame, keys, ks):
    kmax = max(ks)
    rows = []
    for group, g in per_task(frame, keys).groupby(keys, dropna=False):
        scored = g[g.trials >= kmax]
        row = dict(zip(keys, group if isinstance(group, tuple) else (group,)))
        row.update(
            tasks=len(g), tasks_scored=len(scored), tasks_excluded=len(g) - len(scored),
            rollouts=int(g.registered.sum()), valid=int(g.n.sum()), successes=int(g.c.sum()),
            infra_errors=int(g.infra_errors.sum()), unfinished=int(g.unfinished.sum()),
            missing_trials=",".join(sorted(set(g.convention))),
            threshold=g["min"].min() if g["min"].min() == g["max"].max() else None,
            mean_reward=(scored.score_sum / scored.trials).mean() if len(scored) else None,
        )
        for k in ks:
            row[f"pass@{k}"] = scored.apply(lambda t: pass_at_k(int(t.trials), int(t.c), k), axis=1).mean() if len(scored) else None
            row[f"pass^{k}"] = scored.apply(lambda t: pass_hat_k(int(t.trials), int(t.c), k), axis=1).mean() if len(scored) else None
        rows.append(row)
    return pd.DataFrame(rows)


# %% [markdown]
# ## Per experiment, run and iteration (forge analyze's default grouping)

# %%
by = ["experiment", "run", "iteration"]
table = pass_table(r, by, ks)
table

# %% [markdown]
# ## Curves over k = 1 … max(k), one line per group

# %%
curve = pass_table(r, by, list(range(1, kmax + 1)))
fig, (ax_at, ax_hat) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for _, row in curve.iterrows():
    label = f"{row.run} i{row.iteration} ({row.tasks_scored} tasks)"
    xs = list(range(1, kmax + 1))
    ax_at.plot(xs, [row[f"pass@{k}"] for k in xs], marker="o", label=label)
    ax_hat.plot(xs, [row[f"pass^{k}"] for k in xs], marker="o", label=label)
ax_at.set(title="pass@k", xlabel="k", ylim=(0, 1.05))
ax_hat.set(title="pass^k", xlabel="k")
ax_at.legend(fontsize="small")
plt.show()

# %% [markdown]
# ## Over iterations: pass@k, pass^k and mean reward per run

# %%
fig, ax = plt.subplots(figsize=(8, 4))
for run, g in table.sort_values("iteration").groupby("run"):
    for k in ks:
        ax.plot(g.iteration, g[f"pass@{k}"], marker="o", label=f"{run} pass@{k}")
        ax.plot(g.iteration, g[f"pass^{k}"], marker="x", linestyle="--", label=f"{run} pass^{k}")
    ax.plot(g.iteration, g.mean_reward, color="black", label=f"{run} mean reward")
ax.set(xlabel="iteration", ylim=(0, 1.05))
ax.legend(fontsize="x-small", ncol=2)
plt.show()

# %% [markdown]
# ## Per task, and the hardest tasks

# %%
by_task = pass_table(r, by + ["task_id"], ks).sort_values([f"pass@{ks[0]}", "task_id"])
by_task.head(20)

# %%
if figures_out:

    def records(frame):
        """Rows as JSON-ready dicts: NaN becomes null."""
        return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")

    with open(figures_out, "w") as f:
        json.dump({"ks": ks, "pass": records(table), "passCurve": records(curve)}, f, default=float, allow_nan=False)
