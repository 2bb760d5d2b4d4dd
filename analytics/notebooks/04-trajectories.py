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
# # Trajectory browser
#
# Every rollout with its outcome, then one rollout call by call: what the harness sent that was
# new since the previous call, what the model answered, the tool calls it made with their
# results, and the verifier's output. Set `rollout_id` (default: the first rollout that did not
# succeed, else the first) and re-run the last cells, or call `show_rollout("...")`.
# Reads a database written by `forge analyze --data DIR --db forge.duckdb`; the static HTML
# version of the same is `forge analyze --report report.html` (docs/metrics.md).

# %% tags=["parameters"]
db = "forge.duckdb"
rollout_id = None
figures_out = None

# %%
import json
import textwrap

import duckdb
import pandas as pd

con = duckdb.connect(db, read_only=True)
index = con.sql(
    """SELECT r.rollout_id, r.run, r.iteration, r.task_id, r.attempt, r.harness, r.status, r.reward, r.success,
              r.duration_ms, count(c.call_id) AS calls, sum(c.total_tokens)::BIGINT AS tokens
       FROM rollouts r LEFT JOIN calls c USING (rollout_id)
       GROUP BY ALL ORDER BY r.run, r.iteration, r.task_id, r.attempt"""
).df()
index


# %%
def request_messages(body):
    """The conversation a request carries, as (role, text) pairs, for Chat, Responses and Messages."""
    try:
        request = json.loads(body or "{}")
    except json.JSONDecodeError:
        return [("?", body or "")]
    items = request.get("messages") or request.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    out = []
    for item in items:
        role = item.get("role") or item.get("type", "?")
        content = item.get("content", item.get("output", item.get("arguments", "")))
        if isinstance(content, list):
            content = " ".join(str(part.get("text", part.get("content", part.get("input", "")))) for part in content if isinstance(part, dict))
        out.append((role, str(content)))
    return out


def show_rollout(rid, width=110):
    meta = con.execute("SELECT * FROM rollouts WHERE rollout_id = ?", [rid]).df()
    if meta.empty:
        raise KeyError(f"no rollout {rid!r} in {db}")
    m = meta.iloc[0]
    print(f"{rid}  task {m.task_id}  harness {m.harness}  status {m.status}  reward {m.reward}  success {m.success}")
    calls = con.execute(
        """SELECT c.seq, c.protocol, c.model, c.latency_ms, c.prompt_tokens, c.completion_tokens, c.finish_reason,
                  c.assistant_text, b.request_body
           FROM calls c LEFT JOIN call_bodies b USING (call_id) WHERE c.rollout_id = ? ORDER BY c.seq""",
        [rid],
    ).df()
    tools = con.execute("SELECT call_seq, tool_name, arguments, is_error, result_text FROM tool_calls WHERE rollout_id = ? ORDER BY ordinal", [rid]).df()
    seen = 0
    for call in calls.itertuples():
        print(f"\n── call {call.seq} ({call.protocol}, {call.model}) {call.latency_ms or 0:.0f} ms, {call.prompt_tokens} prompt + {call.completion_tokens} completion tokens, finish {call.finish_reason}")
        messages = request_messages(call.request_body)
        for role, text in messages[seen:] if len(messages) >= seen else messages:
            print(textwrap.indent(textwrap.shorten(f"[{role}] {text}", width * 3), "   > "))
        seen = len(messages) + 1  # the answer below comes back as the next request's history
        if isinstance(call.assistant_text, str) and call.assistant_text:
            print(textwrap.indent(textwrap.shorten(f"[assistant] {call.assistant_text}", width * 3), "   < "))
        for tool in tools[tools.call_seq == call.seq].itertuples():
            flag = {True: "error", False: "ok"}.get(tool.is_error, "no signal")
            print(f"   tool {tool.tool_name} ({flag}): {textwrap.shorten(str(tool.arguments), width)}")
            if isinstance(tool.result_text, str) and tool.result_text:
                print(textwrap.indent(textwrap.shorten(tool.result_text, width * 2), "      = "))
    print(f"\nverifier: {textwrap.shorten(str(m.verifier_output or ''), width * 3)}")
    if isinstance(m.error, str) and m.error:
        print(f"error: {m.error}")
    return calls, tools


# %%
if rollout_id is None and len(index):
    failing = index[~index.success.fillna(False).astype(bool)]
    rollout_id = (failing if len(failing) else index).rollout_id.iloc[0]
print("rollout:", rollout_id)

# %%
shown_calls, shown_tools = show_rollout(rollout_id) if rollout_id else (pd.DataFrame(), pd.DataFrame())

# %%
if figures_out:
    with open(figures_out, "w") as f:
        json.dump({"rollouts": len(index), "calls": int(index.calls.sum()), "rollout": rollout_id, "shown_calls": len(shown_calls), "shown_tool_calls": len(shown_tools)}, f, default=float, allow_nan=False)
