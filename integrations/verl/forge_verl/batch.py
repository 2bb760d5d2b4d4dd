"""Reading a ``forge export --format verl`` batch.

The parquet is read with pyarrow when it is installed (it is wherever veRL is); otherwise the
JSONL sidecar ``forge export`` writes beside it (same rows, same order) is read with the
standard library, so tests need nothing else.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator


def _sidecar(path: str) -> str:
    return path[: -len(".parquet")] + ".jsonl" if path.endswith(".parquet") else path


def read_rows(path: str) -> Iterator[dict]:
    """Rows of an exported batch, in file order.

    Example::

        for row in read_rows("data/exports/batch-verl.parquet"):
            print(row["sample_id"], len(row["response_ids"]))
    """
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq  # type: ignore[import-not-found]
        except ImportError:
            sidecar = _sidecar(path)
            if not os.path.exists(sidecar):
                raise FileNotFoundError(
                    f"{path}: pyarrow is not installed and the JSONL sidecar {sidecar} is missing; "
                    "install pyarrow or re-run `forge export` (it writes the sidecar)"
                )
            path = sidecar
        else:
            yield from pq.read_table(path).to_pylist()
            return
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: not a JSON row ({error.msg})") from error


class Batch:
    """An exported batch held in memory, looked up by row index, sample id or group (uid).

    Example::

        batch = Batch.load("data/exports/batch-verl.parquet")
        row = batch.by_index(0)
    """

    def __init__(self, rows: list[dict], path: str = "<rows>") -> None:
        self.path = path
        self.rows = rows
        self._by_sample = {row["sample_id"]: row for row in rows}
        self._by_index = {int(row["extra_info"]["index"]): row for row in rows}
        self._claims: dict[str, int] = {}
        self.groups: dict[str, list[dict]] = {}
        for row in rows:
            self.groups.setdefault(row["uid"], []).append(row)

    @classmethod
    def load(cls, path: str) -> "Batch":
        return cls(list(read_rows(path)), path)

    def __len__(self) -> int:
        return len(self.rows)

    def by_index(self, index: Any) -> dict:
        key = int(index)
        if key not in self._by_index:
            raise KeyError(f"{self.path}: no row with extra_info.index {key} (the batch has {len(self.rows)} rows)")
        return self._by_index[key]

    def by_sample_id(self, sample_id: str) -> dict:
        if sample_id not in self._by_sample:
            raise KeyError(f"{self.path}: no row with sample_id {sample_id!r}")
        return self._by_sample[sample_id]

    def claim(self, group: str, sample_ids: list) -> dict:
        """The next sample of a group row: veRL runs a row ``rollout.n`` times with the same
        fields, so the k-th run of the row in this process gets its k-th sample (cycling)."""
        k = self._claims.get(group, 0)
        self._claims[group] = k + 1
        return self.by_sample_id(str(sample_ids[k % len(sample_ids)]))

    def lookup(self, kwargs: dict) -> dict:
        """The row a veRL dataset item refers to: the next of extra_info.sample_ids (a
        ``--group-rows`` dataset), else extra_info.sample_id, else ``index`` (RLHFDataset copies
        extra_info.index there)."""
        extra = kwargs.get("extra_info") or {}
        ids = extra.get("sample_ids") if isinstance(extra, dict) else None
        if ids is not None and len(ids) > 0:
            return self.claim(str(extra.get("group") or kwargs.get("uid") or ""), list(ids))
        if isinstance(extra, dict) and extra.get("sample_id"):
            return self.by_sample_id(str(extra["sample_id"]))
        if kwargs.get("sample_id"):
            return self.by_sample_id(str(kwargs["sample_id"]))
        if "index" in kwargs:
            return self.by_index(kwargs["index"])
        if isinstance(extra, dict) and "index" in extra:
            return self.by_index(extra["index"])
        raise KeyError("the dataset item has neither extra_info.sample_id nor index: was the dataset a `forge export --format verl` batch?")
