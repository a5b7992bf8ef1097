"""readQueryFromClient per version: how much a read asks for, and what the query
buffer costs, worked by hand from the Redis source.

One connection sends two `SET k1 <16 384-byte value>` requests 2.5 s apart. Each
request is 4 (`*3\\r\\n`) + 9 (`$3\\r\\nSET\\r\\n`) + 8 (`$2\\r\\nk1\\r\\n`) + 8
(`$16384\\r\\n`) + 16 384 + 2 = 16 415 bytes: a little over PROTO_IOBUF_LEN
(16 384), under PROTO_MBULK_BIG_ARG (32 768). Sizes are jemalloc classes of the
bundled allocator (8-byte quantum): ... 16 384, 20 480, 24 576, 28 672, 32 768,
40 960, 49 152, 57 344, 65 536, 81 920 ... (reference §3.3). An sds's room is its
class less header and NUL (src/sds.c `_sdsMakeRoomFor`, `s_malloc_usable`).

The source read, at tags 6.2.16, 7.0.15 and 7.2.6 (src/networking.c
`readQueryFromClient`, src/sds.c, src/server.c `clientsCronResizeQueryBuffer`):
- 6.2 asks for 16 384 bytes, growing the buffer greedily first (`sdsMakeRoomFor`
  does nothing when 16 384 bytes are free);
- 7.x asks for 16 384 bytes non-greedily while the buffer has less room than
  that; afterwards it grows greedily only when less than 16 384 are free and
  asks for all the room there is (PR #9003);
- clientsCron (one client: visited every 100 ms at hz 10) trims 6.2's buffer
  over 32 KB when alloc / (peak + 1) > 2, 7.x's when its room is over 32 KB and
  twice its peak, to max(length, peak) — 7.2 lifts the peak on a non-greedy
  read, 7.0 only after the read; both end the same here.
"""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from tests.engine_helpers import ZERO_OVERHEAD

VALUE = 16384
C_BUF = 16384  # 7.x c->buf at connect; clientsCron shrinks it to 1 024 B
STRUCT = {"6.2": 20480, "7.0": 768, "7.2": 896}  # 6.2's struct holds its 16 KB c->buf


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    trace = tmp_path_factory.mktemp("read") / "two-sets.trace"
    trace.write_text(f"SET k1 {'x' * VALUE}\nSET k1 {'x' * VALUE}\n")
    out = {}
    for version in STRUCT:
        # No CPU costs: serverCron runs at exact 100 ms steps, and the first SET
        # (after one 2.5 s think) arrives at 2.5001 s, just after the 2.5 s cron.
        sc = {"name": "read", "redis-version": version, "duration": 6.0,
              "sample-interval": 0.05, "engine": {"cpu": dict(ZERO_OVERHEAD)},
              "clients": [{"kind": "trace", "trace": str(trace), "replay": "once",
                           "think": "2.5s", "pool": {"max-size": 1}}]}
        out[version] = simulate(load_scenario(sc)).timeseries["mem_clients_true"]
    return out


def _at(series, t: float) -> int:
    return int(series.loc[round(t, 2)])


def test_7_0_reads_the_second_request_whole_into_the_buffer_it_has(runs):
    mem = runs["7.0"]
    # Nothing before the first request: the model accepts a connection at its
    # first read (event_loop.py's deviations).
    assert _at(mem, 1.0) == 0
    # First SET, first read: room 0 < 16 384, so non-greedy room for 16 384 B:
    # type-16 header (5) + 16 384 + 1 = 16 390 -> 20 480 B (room 20 474); 16 384
    # bytes read. Second read (the 31 bytes left): 20 474 - 16 384 = 4 090 free
    # < 16 384, so greedy: (16 384 + 16 384) x 2 = 65 536 -> type 32, 9 + 65 536 +
    # 1 -> 81 920 B. At 2.55 s no cron has run since.
    assert _at(mem, 2.55) == 768 + C_BUF + 81920
    # The 2.6 s cron: room 81 910 > 32 768 and 81 910 / 2 > peak (16 415): resize
    # to the peak, 9 + 16 415 + 1 -> 20 480 B (room 16 415); c->buf's peak (5 B of
    # "+OK") is under half its size: 1 024 B. The 22 272 B Debian's 7.0.15 shows.
    assert _at(mem, 3.0) == 768 + 1024 + 20480 == 22272
    # Second SET at ~5.0 s: 16 415 B of room >= 16 384 free, so no growth, and
    # the read asks for all 16 415: one read, the buffer unchanged.
    assert _at(mem, 5.05) == 768 + 1024 + 20480


def test_7_2_ends_as_7_0_with_its_larger_struct(runs):
    mem = runs["7.2"]
    assert _at(mem, 2.55) == 896 + C_BUF + 81920
    assert _at(mem, 3.0) == 896 + 1024 + 20480
    assert _at(mem, 5.05) == 896 + 1024 + 20480


def test_6_2_grows_once_and_is_trimmed_at_the_second_visit(runs):
    mem = runs["6.2"]
    # First read: greedy room for 16 384: 32 768 -> 5 + 32 768 + 1 -> 40 960 B
    # (room 40 954). Second read: 40 954 - 16 384 = 24 570 free >= 16 384: no
    # growth (the model used to grow this to 81 920 B).
    assert _at(mem, 2.55) == 20480 + 40960
    # 2.6 s cron: 40 960 / (16 384 + 1) = 2, not > 2: kept; peak reset to 0.
    # 2.7 s cron: 40 960 / 1 > 2 and 40 954 free > 4 KB: trimmed to an empty
    # sds (8 B).
    assert _at(mem, 2.65) == 20480 + 40960
    assert _at(mem, 3.0) == 20480 + 8
