"""Reading a ``forge export --format verl`` batch (the per-sample parquet) and finding the
samples a veRL dataset row stands for."""

from __future__ import annotations

import json
import os
from typing import Any, Iterator, Optional

from .row import sample_of_row


def _sidecar(path: str) -> str:
    return path[: -len(".parquet")] + ".jsonl" if path.endswith(".parquet") else path


def read_rows(path: str) -> Iterator[dict]:
    """Rows of an exported batch, in file order: the parquet through pyarrow (veRL depends on
    it), or a ``.jsonl`` export / sidecar with the standard library.

    Example::

        for row in read_rows("data/exports/batch-verl.parquet"):
            print(row["sample_id"], len(row["response_ids"]))
    """
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq  # type: ignore[import-not-found]

        yield from pq.read_table(path).to_pylist()
        return
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not a JSON row ({error.msg})") from error


def blob_dir_of(path: str) -> str:
    """Where ``forge export`` writes the images a batch refers to: ``<batch>.blobs/<sha256>``."""
    base = path[: -len(".parquet")] if path.endswith(".parquet") else path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return base + ".blobs"


class Batch:
    """An exported batch held in memory as samples (each row flattened by the row specification,
    ``row.sample_of_row``): by ``extra_info.index``, by sample id, and each rollout's samples in
    order (the final one last).

    Example::

        batch = Batch.load("data/exports/batch-verl.parquet")
        samples = batch.rollout_samples(batch.samples[0]["rollout_id"])
    """

    def __init__(self, rows: list[dict], path: str = "<rows>") -> None:
        self.path = path
        self.samples = [sample_of_row(row, path) for row in rows]
        self.blob_dir = blob_dir_of(path)
        self._by_sample = {s["sample_id"]: s for s in self.samples}
        self._by_index = {int(s["index"]): s for s in self.samples}
        self._by_rollout: dict[str, list[dict]] = {}
        for s in self.samples:
            self._by_rollout.setdefault(s["rollout_id"], []).append(s)
        for samples in self._by_rollout.values():
            samples.sort(key=lambda s: (bool(s.get("is_final")), int(s.get("sample_index", 0))))
        self._claims: dict[str, int] = {}

    @classmethod
    def load(cls, path: str) -> "Batch":
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no exported batch here (batch_path in the agent-loop YAML, or FORGE_BATCH); run `forge export --format verl --out {path}`")
        return cls(list(read_rows(path)), path)

    def __len__(self) -> int:
        return len(self.samples)

    def by_index(self, index: Any) -> dict:
        key = int(index)
        if key not in self._by_index:
            raise KeyError(f"{self.path}: no row with extra_info.index {key} (the batch has {len(self.samples)} rows)")
        return self._by_index[key]

    def by_sample_id(self, sample_id: str) -> dict:
        if sample_id not in self._by_sample:
            raise KeyError(f"{self.path}: no row with sample_id {sample_id!r}")
        return self._by_sample[sample_id]

    def rollout_samples(self, rollout_id: str) -> list[dict]:
        """Every exported sample of a rollout, in order, the final one (the reward's) last."""
        if rollout_id not in self._by_rollout:
            raise KeyError(f"{self.path}: no samples of rollout {rollout_id!r}")
        return self._by_rollout[rollout_id]

    def _claim(self, group: str, count: int) -> int:
        k = self._claims.get(group, 0)
        self._claims[group] = k + 1
        return k % count

    def lookup(self, kwargs: dict) -> tuple[list[dict], Optional[str]]:
        """The samples a veRL dataset item stands for, and the rollout they come from.

        - A group row (``forge export --group-rows n``, ``extra_info.rollout_ids``): veRL runs it
          ``rollout.n`` times; the V1 worker numbers the runs (``session_id``), so run i replays
          rollout i, all of its samples. Without ``session_id`` (the legacy trainer) the k-th run
          of the row in this process gets the k-th rollout.
        - A per-sample row (``sample_id``, else ``index``): that one sample.

        Group rows of an older export, naming ``extra_info.sample_ids`` only, are refused with
        the fix: re-export the batch (their one sample per run lost the rollout's other samples).
        """
        extra = kwargs.get("extra_info") or {}
        if not isinstance(extra, dict):
            extra = {}
        group = str(extra.get("group") or kwargs.get("uid") or "")
        rollout_ids = extra.get("rollout_ids")
        if rollout_ids is not None and len(rollout_ids) > 0:
            ids = list(rollout_ids)
            i = int(kwargs["session_id"]) % len(ids) if "session_id" in kwargs else self._claim(group, len(ids))
            return list(self.rollout_samples(str(ids[i]))), str(ids[i])
        if extra.get("sample_ids") is not None and len(extra["sample_ids"]) > 0:
            raise KeyError(
                f"{self.path}: the dataset row of group {group!r} names only extra_info.sample_ids, the group rows of an older "
                "`forge export --group-rows`, which this loop no longer reads (a row now names its rollouts, extra_info.rollout_ids); "
                f"re-export the batch and its group dataset: `forge export --format verl --group-rows <rollout.n> --out {self.path}`"
            )
        if kwargs.get("sample_id"):
            row = self.by_sample_id(str(kwargs["sample_id"]))
            return [row], row["rollout_id"]
        index = kwargs.get("index", extra.get("index"))
        if index is not None:
            row = self.by_index(index)
            return [row], row["rollout_id"]
        raise KeyError("the dataset item has neither extra_info.rollout_ids, sample_id nor index: was the dataset written by `forge export --format verl`?")
