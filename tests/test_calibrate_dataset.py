"""The dataset sweep's bookkeeping without a server (``redsim/calibrate/dataset.py``):
the populate's chunks and names, the medians and the CSV."""

from __future__ import annotations

import csv

from redsim.calibrate import dataset
from redsim.live import load


class _Client:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def eval(self, script, numkeys, *args):
        self.calls.append(args)


def test_populate_writes_every_key_once_in_chunks_with_the_benchmarks_names():
    c = _Client()
    dataset.populate(c, 100, 1_200_100, 64)
    # 1,200,000 keys from 100: chunks of 500,000, the last one short, contiguous.
    assert [(lo, hi) for lo, hi, *_ in c.calls] == [(100, 500_100), (500_100, 1_000_100),
                                                    (1_000_100, 1_200_100)]
    assert all(v == "x" * 64 and prefix == load.PREFIX and ttl == 0
               for _lo, _hi, v, prefix, ttl in c.calls)
    # The Lua names keys as redis-benchmark's __rand_int__ does: 12 digits.
    assert "%012d" in dataset._POPULATE and load.key_pattern() == load.PREFIX + "__rand_int__"


def test_medians_and_csv(tmp_path):
    pts = [dataset.DatasetPoint(1000, 64, "GET", 50, 16, r, us, 1e6, 3.0)
           for r, us in enumerate((1.0, 3.0, 2.0))]
    assert dataset.medians(pts) == {(1000, 64, "GET", 16): 2.0}
    dataset.write_csv(pts, tmp_path / "d.csv")
    rows = list(csv.DictReader(open(tmp_path / "d.csv")))
    assert [float(r["us_per_request"]) for r in rows] == [1.0, 3.0, 2.0]
    assert rows[0]["keys"] == "1000" and rows[0]["command"] == "GET"
