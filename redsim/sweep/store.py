"""A sweep's folder: one file per finished run, written atomically, and the tables.

```
OUT/sweep.yaml           the sweep as run (canonical YAML)
OUT/runs/<key>-s<seed>.json   one finished run: its summary or its error
OUT/runs.parquet, .csv   tidy table: one row per run (point x replication)
OUT/aggregate.parquet, .csv   one row per point: means with 95 % CIs,
                         burst probability with its Wilson interval
OUT/timings.csv          wall time per run (kept out of the tables, which must
                         not depend on the machine)
```

A run is identified by its scenario's hash and its seed, so a run file is valid
for any sweep that simulates the same thing, and resuming means running what
has no file. Each file is written to a temporary name and renamed, so a sweep
killed at any moment leaves only whole files. A run file also records the
hash of the model's source (``model``): after the model changes, old files are
not reused.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from redsim.result import model_version

RUNS_DIR = "runs"


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        v = float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return None if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


class RunStore:
    """The run files of one sweep folder."""

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.out = Path(out)
        self.runs = self.out / RUNS_DIR
        self.version = model_version()

    def path(self, key: str, seed: int) -> Path:
        """Where the run of scenario ``key`` with ``seed`` is stored."""
        return self.runs / f"{key[:24]}-s{seed}.json"

    def get(self, key: str, seed: int) -> dict[str, Any] | None:
        """A finished run's record, or None (missing, or from another model version)."""
        p = self.path(key, seed)
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            return None
        if rec.get("model") != self.version or rec.get("key") != key:
            return None
        return rec

    def put(self, record: dict[str, Any]) -> None:
        """Store a finished run (``key``, ``seed``, ``summary`` or ``error``, ``wall_s``)."""
        rec = {k: _jsonable(v) for k, v in record.items() if k not in ("summary", "phases",
                                                                      "peaks")}
        rec.setdefault("model", self.version)
        for part in ("summary", "peaks"):
            rec[part] = {k: _jsonable(v) for k, v in (record.get(part) or {}).items()}
        rec["phases"] = [{k: _jsonable(v) for k, v in row.items()}
                         for row in record.get("phases") or []]
        data = json.dumps(rec, sort_keys=True, indent=1).encode()
        atomic_write_bytes(self.path(record["key"], record["seed"]), data)

    def count(self) -> int:
        """Run files present (any version)."""
        return len(list(self.runs.glob("*.json"))) if self.runs.exists() else 0


def write_table(df: pd.DataFrame, path_stem: Path) -> None:
    """Write ``df`` as ``<stem>.parquet`` and ``<stem>.csv``, each atomically."""
    atomic_write_bytes(path_stem.with_suffix(".csv"), df.to_csv(index=False).encode())
    tmp = path_stem.with_suffix(".parquet.tmp")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path_stem.with_suffix(".parquet"))
