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
# # Tokens and latency
#
# Per-rollout token budgets by harness (as `forge analyze` prints them) and by iteration, model
# call latency and time to first token per model and protocol, and reward against tokens spent.
# Reads a database written by `forge analyze --data DIR --db forge.duckdb`.

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
calls = con.sql("SELECT rollout_id, seq, model, protocol, stream, status, latency_ms, ttft_ms, prompt_tokens, completion_tokens, total_tokens, iteration, harness FROM calls").df()
for column in ["prompt_tokens", "completion_tokens", "total_tokens"]:
    b[column] = b[column].astype(float)
print(f"{len(b)} rollouts, {len(calls)} model calls")

# %% [markdown]
# ## Token budgets per harness (percentiles interpolated linearly, as DuckDB's quantile_cont)

# %%
budgets = (
    b.groupby("harness")
    .agg(
        rollouts=("rollout_id", "count"),
        mean_prompt_tokens=("prompt_tokens", "mean"),
        mean_completion_tokens=("completion_tokens", "mean"),
        p50_tokens=("total_tokens", lambda s: s.quantile(0.5)),
        p95_tokens=("total_tokens", lambda s: s.quantile(0.95)),
        max_tokens=("total_tokens", "max"),
    )
    .reset_index()
)
budgets

# %%
by_iteration = b.groupby(["harness", "iteration"]).total_tokens.describe(percentiles=[0.5, 0.95])
by_iteration

# %%
fig, (ax_tokens, ax_latency) = plt.subplots(1, 2, figsize=(10, 4))
for harness, g in b.groupby("harness"):
    ax_tokens.hist(g.total_tokens, bins=20, alpha=0.6, label=harness)
ax_tokens.set(title="tokens per rollout", xlabel="total tokens")
ax_tokens.legend(fontsize="small")
for model, g in calls.groupby("model"):
    ax_latency.hist(g.latency_ms.dropna(), bins=20, alpha=0.6, label=model)
ax_latency.set(title="model call latency", xlabel="ms")
ax_latency.legend(fontsize="small")
plt.show()

# %% [markdown]
# ## Latency and time to first token per model and protocol (streamed calls for TTFT)

# %%
latency = (
    calls.groupby(["model", "protocol"])
    .apply(
        lambda g: pd.Series(
            {
                "calls": len(g),
                "p50_latency_ms": g.latency_ms.quantile(0.5),
                "p95_latency_ms": g.latency_ms.quantile(0.95),
                "p50_ttft_ms": g.ttft_ms[g.stream.fillna(False).astype(bool)].quantile(0.5),
                "failed_calls": int((g.status != "ok").sum()),
            }
        ),
        include_groups=False,
    )
    .reset_index()
)
latency

# %% [markdown]
# ## Reward against tokens spent

# %%
fig, ax = plt.subplots(figsize=(6, 4))
ax.scatter(b.total_tokens, b.reward, alpha=0.6)
ax.set(xlabel="total tokens", ylabel="reward")
plt.show()

# %%
if figures_out:

    def records(frame):
        """Rows as JSON-ready dicts: NaN becomes null."""
        return frame.astype(object).where(frame.notna(), None).to_dict(orient="records")

    # Over every call; forge analyze pools the calls of rollouts that are not infra errors.
    pooled = {"latency_ms": float(calls.latency_ms.dropna().mean()) if calls.latency_ms.notna().any() else None, "calls": len(calls)}
    with open(figures_out, "w") as f:
        json.dump({"tokenBudgets": records(budgets), "pooled": pooled}, f, default=float, allow_nan=False)
