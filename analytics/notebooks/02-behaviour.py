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

# %% [markdown]
# # Behaviour metrics
#
# How agents work, next to whether they succeed: tool coverage, self-verification, error
# recovery, plan completion, checks run, turns, tokens and shell share per experiment, run and
# iteration (as `forge analyze` prints them) and per harness, each share with the n it is over.
# Definitions and their precision / recall on a labelled set: docs/metrics.md. Reads a database
# written by `forge analyze --data DIR --db forge.duckdb`.

# %% tags=["parameters"]
db = "forge.duckdb"
figures_out = None

# %%
import json

import duckdb
import matplotlib.pyplot as plt
import pandas as pd

con = duckdb.connect(db, read_only=True)
b = con.sql("SELECT * FROM rollout_behaviour WHERE status IS DISTINCT FROM 'infra_error'").df()
tools = con.sql("SELECT rollout_id, ordinal, tool_name, kind, is_error, result_text FROM tool_calls").df()
print(f"{len(b)} rollouts (infra errors left out), {len(tools)} tool calls")


# %%
def share(part, whole):
    return None if whole == 0 or pd.isna(whole) else float(part) / float(whole)


def behaviour_table(frame, keys):
    rows = []
    for group, g in frame.groupby(keys, dropna=False):
        row = dict(zip(keys, group if isinstance(group, tuple) else (group,)))
        edited = g[g.edited.fillna(False).astype(bool)]
        row.update(
            rollouts=len(g),
            tool_coverage=g.tool_coverage.mean() if g.tool_coverage.notna().any() else None,
            tool_coverage_n=int(g.tool_coverage.notna().sum()),
            self_verification=share(edited.self_verified.fillna(False).astype(bool).sum(), len(edited)),
            self_verification_n=len(edited),
            error_recovery=share(g.errors_recovered.sum(), g.tool_errors.sum()),
            error_recovery_n=int(g.tool_errors.sum()),
            plan_completion=g.plan_completion.mean() if g.plan_completion.notna().any() else None,
            plan_completion_n=int(g.plan_completion.notna().sum()),
            ran_checks=g.ran_checks.astype(float).mean(),
            error_signal_share=share(g.tool_results_known.sum(), g.tool_results.sum()),
            tool_results=int(g.tool_results.sum()),
            turns=g.turns.astype(float).mean(),
            tokens=g.total_tokens.astype(float).mean(),
            shell_share=share(g.shell_calls.sum(), g.tool_calls.sum()),
            ttft_ms=share(g.ttft_sum.sum(), g.ttft_calls.sum()),
            latency_ms=share(g.latency_sum.sum(), g.latency_calls.sum()),
        )
        rows.append(row)
    return pd.DataFrame(rows)


# %% [markdown]
# ## Per experiment, run and iteration

# %%
by_iteration = behaviour_table(b, ["experiment", "run", "iteration"])
by_iteration

# %% [markdown]
# ## Per harness, with success next to it

# %%
by_harness = behaviour_table(b, ["harness"])
by_harness["success_rate"] = b.groupby("harness").success.apply(lambda s: s.fillna(False).astype(float).mean()).values
metrics = ["tool_coverage", "self_verification", "error_recovery", "plan_completion", "ran_checks", "shell_share", "success_rate"]
ax = by_harness.set_index("harness")[metrics].astype(float).T.plot.bar(figsize=(9, 4), rot=30)
ax.set(ylim=(0, 1.05), title="behaviour per harness (shares)")
plt.show()

# %% [markdown]
# ## Does verifying after the last edit pay off?

# %%
edited = b[b.edited.fillna(False).astype(bool)]
edited.groupby(edited.self_verified.fillna(False).astype(bool)).agg(rollouts=("rollout_id", "count"), success_rate=("success", lambda s: s.fillna(False).astype(float).mean()))

# %% [markdown]
# ## The tools used, their kind and how often their result reports an error

# %%
tool_table = (
    tools.groupby(["tool_name", "kind"], dropna=False)
    .agg(calls=("ordinal", "count"), error_rate=("is_error", lambda s: s.dropna().astype(float).mean() if s.notna().any() else None), with_error_signal=("is_error", "count"))
    .reset_index()
    .sort_values("calls", ascending=False)
)
tool_table.head(25)

# %%
if figures_out:

    def records(frame):
        """Rows as JSON-ready dicts: NaN becomes null."""
        return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")

    with open(figures_out, "w") as f:
        json.dump({"behaviour": records(by_iteration), "behaviourByHarness": records(by_harness.drop(columns="success_rate"))}, f, default=float, allow_nan=False)
