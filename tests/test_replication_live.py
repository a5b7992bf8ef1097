"""The replication buffer and PSYNC against a real primary and replica.

Two redis-servers this test starts (127.0.0.1, free ports, throw-away dirs,
stopped by their PIDs): a primary and a replica of it. Pings are put off
(``repl-ping-replica-period 3600``) so the stream is exactly the SETs written
plus the ``SELECT 0`` that opens it.

1. After a known stream, the primary's INFO must show what
   ``model/replication_buffer.py`` computes for the same ``master_repl_offset``:
   the backlog's first byte and history (whole 20 440-B blocks, trimmed while
   more than ``repl-backlog-size`` would remain), ``mem_total_replication_buffers``
   (20 504 B a block) and ``mem_not_counted_for_evict``. Exact: these are
   integer arithmetic with nothing random in it.
2. A replica that has fallen ~40 MB behind (it is stopped by ``DEBUG SLEEP``
   while the primary takes the writes) and whose link is then cut
   (``CLIENT KILL TYPE replica``) resyncs partially iff its offset is inside
   the backlog: with the default 1 MB backlog a full sync, with 256 MB a
   partial one (``sync_full`` / ``sync_partial_ok`` / ``sync_partial_err``),
   as ``model/replication.py``'s ``psync`` decides. 40 MB is far outside 1 MB
   and far inside 256 MB, whatever the loopback's socket buffers held.
"""

from __future__ import annotations

import threading
import time

import pytest

from redsim.model import replication, replication_buffer
from redsim.model import state as S
from tests.engine_helpers import tiny_world

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _online(primary, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if primary.info("replication").get("slave0", {}).get("state") == "online":
            return
        time.sleep(0.05)
    pytest.fail("the replica did not come online")


def _model_at(offset: int, backlog: str) -> dict[str, int]:
    """The model's figures once ``offset`` bytes are fed with an up-to-date replica."""
    w, _ = tiny_world({"redis-version": "7.0",
                       "server": {"save": "", "repl-backlog-size": backlog},
                       "replicas": [{"start": "online"}],
                       "clients": [{"kind": "closed", "processes": 1, "mix": {"GET": 1},
                                    "keyspace": {"keys": 10}}]})
    step = 4096
    while int(w.I[S.REPL_OFFSET]) < offset:
        replication_buffer.feed(w, min(step, offset - int(w.I[S.REPL_OFFSET])))
        w.rp_sent[0] = w.rp_wire[0] = w.I[S.REPL_OFFSET]  # the replica keeps up
        replication.trim_backlog(w, 1 << 40)
    first, hist = replication_buffer.backlog_window(w)
    return {"repl_backlog_first_byte_offset": first, "repl_backlog_histlen": hist,
            "mem_total_replication_buffers": replication_buffer.replication_memory(w),
            "mem_not_counted_for_evict": replication_buffer.not_counted(w)}


@pytest.mark.usefixtures("python_kernel")
@pytest.mark.parametrize(("backlog", "sets", "size"), [("16kb", 105, 1000), ("1mb", 3000, 1000)])
def test_the_buffer_arithmetic_matches_a_real_primary(backlog, sets, size):
    from redsim.live.server import RedisServer

    with RedisServer(config={"repl-backlog-size": backlog,
                             "repl-ping-replica-period": 3600}) as primary_srv, \
            RedisServer(config={"replicaof": f"127.0.0.1 {primary_srv.port}"}):
        p = primary_srv.client()
        _online(p)
        value = "x" * size
        for k in range(sets):
            p.set(f"key:{k:012d}", value)
        time.sleep(0.3)  # beforeSleep trims what the replica has been sent
        info = {**p.info("replication"), **p.info("memory")}
    offset = int(info["master_repl_offset"])
    # SELECT 0 (23 B) and each SET of a 16-byte key: 4 + 9 + 5 + 16 + 2 + 1+n(len)+2 + size + 2.
    assert offset == 23 + sets * (4 + 9 + 5 + 16 + 2 + 1 + len(str(size)) + 2 + size + 2)
    model = _model_at(offset, backlog)
    print(f"offset {offset}: live {[info[k] for k in model]}, model {list(model.values())}")
    for key, value in model.items():
        assert int(info[key]) == value, key


def _lagging_resync(backlog: str) -> dict[str, int]:
    from redsim.live.server import RedisServer

    with RedisServer(config={"repl-backlog-size": backlog,
                             "repl-ping-replica-period": 3600,
                             "client-output-buffer-limit": "replica 0 0 0"}) as primary_srv, \
            RedisServer(config={"replicaof": f"127.0.0.1 {primary_srv.port}",
                                "enable-debug-command": "yes"}) as replica_srv:
        p = primary_srv.client()
        _online(p)
        sleeper = threading.Thread(
            target=lambda: replica_srv.client().execute_command("DEBUG", "SLEEP", 3))
        sleeper.start()
        time.sleep(0.2)
        value = "x" * 10_000
        pipe = p.pipeline(transaction=False)
        for k in range(4000):  # ~40 MB of stream while the replica reads nothing
            pipe.set(f"key:{k:012d}", value)
        pipe.execute()
        p.execute_command("CLIENT", "KILL", "TYPE", "replica")
        sleeper.join()
        _online(p, timeout=30.0)
        return {k: int(v) for k, v in p.info("stats").items()
                if k in ("sync_full", "sync_partial_ok", "sync_partial_err")}


def test_a_cut_replica_resyncs_partially_iff_its_offset_is_in_the_backlog():
    small = _lagging_resync("1mb")
    large = _lagging_resync("256mb")
    print(f"1mb: {small}, 256mb: {large}")
    # The first sync of each replica is a full one (PSYNC ? -1, not a refused partial).
    assert small == {"sync_full": 2, "sync_partial_ok": 0, "sync_partial_err": 1}
    assert large == {"sync_full": 1, "sync_partial_ok": 1, "sync_partial_err": 0}
