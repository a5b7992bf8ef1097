"""Write the small cache-trace samples the trace-format tests read.

    python tests/data/traces/make_samples.py

writes ``twitter-sample.csv`` (Twitter cache-trace CSV) and ``oracle-sample.bin``
(libCacheSim oracleGeneral records) next to this file. Both come from a fixed
seed through ``random.Random.random`` alone (whose sequence Python keeps from
version to version), so the files are the same every time; the tests call
``twitter_rows`` and ``oracle_records`` for what was written and compare the
readers' output with it.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
TWITTER = HERE / "twitter-sample.csv"
ORACLE = HERE / "oracle-sample.bin"
SEED = 20

# Operation weights, roughly a read-mostly Twemcache cluster with every operation present.
OPS = (("get", 50), ("gets", 5), ("set", 15), ("add", 4), ("replace", 3), ("cas", 3),
       ("append", 3), ("prepend", 2), ("delete", 6), ("incr", 5), ("decr", 4))
WRITES = {"set", "add", "replace", "cas", "append", "prepend"}
TTLS = (0, 0, 60, 3600, 86400)


def _pick(r: random.Random, weighted: tuple[tuple[str, int], ...]) -> str:
    u = r.random() * sum(w for _, w in weighted)
    for name, w in weighted:
        if u < w:
            return name
        u -= w
    return weighted[-1][0]


def _int(r: random.Random, low: int, high: int) -> int:
    """A whole number in [low, high], from r.random() alone."""
    return low + min(int(r.random() * (high - low + 1)), high - low)


def twitter_rows(seed: int = SEED, n: int = 300) -> list[tuple[int, str, int, int, int, str, int]]:
    """The sample's requests: (timestamp s, key, key size, value size, client id,
    operation, TTL s), in file order."""
    r = random.Random(seed)
    names = [f"nz:u:{_int(r, 0, 16**8):08x}" for _ in range(39)] + ["nz,c:comma"]
    key_size = {k: _int(r, 12, 60) for k in names}
    rows = []
    t = 1_580_000_000
    while len(rows) < n:
        for _ in range(_int(r, 1, 9)):  # this second's requests
            # Skewed popularity: low-numbered keys come up most.
            key = names[min(int(len(names) * r.random() ** 2.5), len(names) - 1)]
            op = _pick(r, OPS)
            if op in WRITES:
                value = 40_000 if r.random() < 0.05 else _int(r, 1, 4000)  # a few big values
                ttl = TTLS[_int(r, 0, len(TTLS) - 1)]
            elif op in ("get", "gets"):
                value, ttl = _int(r, 0, 4000), 0
            else:
                value, ttl = 0, 0
            rows.append((t, key, key_size[key], value, _int(r, 1, 20), op, ttl))
        t += _int(r, 1, 3)  # seconds with no request in between, now and then
    return rows[:n]


def oracle_records(seed: int = SEED, n: int = 200) -> list[tuple[int, int, int, int]]:
    """The oracleGeneral sample's records: (clock_time s, obj_id, obj_size B,
    next_access_vtime), in file order; a few have size 0 (readers skip them)."""
    r = random.Random(seed + 1)
    objects = [_int(r, 1, 2**64 - 1) for _ in range(30)]
    sizes = {o: _int(r, 1, 200_000) for o in objects}
    picks, times = [], []
    t = 1_000
    while len(picks) < n:
        for _ in range(_int(r, 1, 6)):
            picks.append(objects[min(int(len(objects) * r.random() ** 2), len(objects) - 1)])
            times.append(t)
        t += _int(r, 1, 2)
    picks, times = picks[:n], times[:n]
    zero = {i for i in range(n) if r.random() < 0.03}
    nxt = [-1] * n
    seen: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = seen.get(picks[i], -1)
        seen[picks[i]] = i
    return [(times[i], picks[i], 0 if i in zero else sizes[picks[i]], nxt[i]) for i in range(n)]


def twitter_text(rows: list[tuple[int, str, int, int, int, str, int]]) -> str:
    return "".join(",".join(str(x) for x in row) + "\n" for row in rows)


def oracle_bytes(records: list[tuple[int, int, int, int]]) -> bytes:
    return b"".join(struct.pack("<IQIq", *rec) for rec in records)


def main() -> None:
    TWITTER.write_text(twitter_text(twitter_rows()), encoding="utf-8", newline="\n")
    ORACLE.write_bytes(oracle_bytes(oracle_records()))
    print(f"wrote {TWITTER.name} and {ORACLE.name}")


if __name__ == "__main__":
    main()
