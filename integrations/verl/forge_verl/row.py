"""The exported row as ``forge export`` specifies it (``row_spec.json``, generated from
``trajectories/row.ts``): each field in one place, at the top level or in ``extra_info``.

``sample_of_row`` flattens a row into the shape of the trajectory route's samples (the same
field names), so the rest of forge_verl reads one shape whatever the mode. A test on each side
(``trajectories/row.test.ts``, ``tests/test_units.py``) fails when the two drift.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SPEC: dict = json.loads((Path(__file__).with_name("row_spec.json")).read_text())

#: The flattened fields forge_verl reads of a sample (samples.py, batch.py, agent_loop.py).
READS = (
    "prompt_ids",
    "response_ids",
    "response_mask",
    "response_logprobs",
    "reward",
    "num_turns",
    "sample_id",
    "rollout_id",
    "policy_version",
    "policy_versions",
    "sample_index",
    "is_final",
    "auxiliary",
    "status",
    "image_refs",
    "index",
)

#: The columns a row cannot do without: the tokens and where replay finds it.
REQUIRED = ("prompt_ids", "response_ids", "response_mask", "response_logprobs", "sample_id", "rollout_id", "extra_info")


def sample_of_row(row: dict, where: str = "<rows>") -> dict:
    """An exported veRL row flattened by the specification: every top-level column and every
    ``extra_info`` entry under its field name (``uid`` becomes ``group``). Columns a row
    lacks are left out (hand-built rows, or a batch from an older export), but not the tokens.

    Example::

        sample = sample_of_row(row)
        sample["is_final"], sample["status"]  # from extra_info
    """
    missing = [c for c in REQUIRED if c not in row]
    if missing:
        raise KeyError(f"{where}: a row lacks {', '.join(missing)}: not a `forge export --format verl` batch; export it with `forge export --format verl --out {where}`")
    extra = row.get("extra_info") or {}
    out: dict[str, Any] = {}
    for entry in SPEC["verl"]["row"]:
        if entry["column"] in row:
            out[entry["field"]] = row[entry["column"]]
    for entry in SPEC["verl"]["extra_info"]:
        if entry["column"] in extra:
            out[entry["field"]] = extra[entry["column"]]
    return out
