"""The dual-channel full sync (``dual-channel: yes``) against hand calculations.

The primary of ``test_replication_loop``: 400 000 keys of 1 000 B, 20 000 SET/s
of 1 045 B (a stream of s = 20.9 MB/s), a replica on a 400 Mbit link (50 MB/s)
that asks for a full sync at the start, a 407 600 018-B RDB, a load rate of
200 MiB/s. By hand, following Valkey 8.0's ``replication.c``:

- while the RDB crosses, the link is shared: the stream needs s < 25 MB/s (half
  the link), so it gets s and the RDB the rest, 50 − 20.9 = 29.1 MB/s: the
  transfer takes 407.6 / 29.1 = 14.0 s (8.15 s without the stream);
- the replica buffers the stream it receives; while it loads the RDB (1.94 s)
  it reads 4 × 16 KB per 2 MB loaded, 1/32 of 200 MiB/s = 6.55 MB/s;
- then it applies its buffer at its apply rate, reading nothing, and streams.
"""

from __future__ import annotations

import math

import pytest

from redsim import load_scenario, simulate
from redsim.config.errors import ScenarioError
from tests.test_replication_loop import BLOCK, LINK, LOAD, RDB, RESP_SET, STREAM, _scenario

pytestmark = pytest.mark.slow  # about 2 s each, compiled

MIB = 1024**2
SNDBUF = 4 * MIB  # the socket-buffer default
LOAD_READ = LOAD * 4 * 16_384 / (2 * MIB)  # 6.55 MB/s


def _dual(**replica):
    return {"link-bandwidth": "400mbit", "rtt": "500us", "load-rate": "200mb/s",
            "start": "full-sync", "dual-channel": "yes", **replica}


def _times(ev, *names):
    return [float(ev[ev["event"] == e]["time"].iloc[0]) for e in names]


@pytest.fixture(scope="module")
def synced():
    # The replica buffers up to 512 MiB and applies at 500 MiB/s; the primary
    # keeps the 64 MiB hard limit that makes test_replication_loop's loop.
    return simulate(_scenario(_dual(**{"full-sync-buffer-limit": "512mb",
                                       "apply-rate": "500mb/s"})), progress=False)


def test_a_dual_channel_sync_completes_where_the_single_channel_one_loops(synced):
    ev = synced.replication
    assert list(ev["event"]) == ["full_resync", "fork", "rdb_transferred", "loaded", "online"]
    s = synced.summary
    assert s["replica_obuf_disconnections"] == 0
    # Valkey counts the refused PSYNC ? as nothing, the RDB channel's SYNC as a
    # full sync and the main channel's PSYNC from the fork's offset as partial.
    assert (s["sync_full"], s["sync_partial_ok"], s["sync_partial_err"]) == (1, 1, 0)
    assert s["replica_states_end"] == ["online"]
    # Caught up: it lacks less than a socket buffer at the end.
    assert synced.timeseries["repl_max_lag_bytes"].iloc[-1] < SNDBUF


def test_the_rdb_gets_what_the_stream_leaves_of_the_link(synced):
    t_fork, t_rdb = _times(synced.replication, "fork", "rdb_transferred")
    # 280 000 SETs in 14 s vary by 0.2 %: the RDB's share by less than 0.2 %.
    assert t_rdb - t_fork == pytest.approx(RDB / (LINK - STREAM), rel=0.01)


def test_the_replica_buffers_the_stream_and_applies_it_after_the_load(synced):
    ev = synced.replication
    t_fork, t_rdb, t_loaded, t_online = _times(ev, "fork", "rdb_transferred", "loaded",
                                               "online")
    assert t_loaded - t_rdb == pytest.approx(RDB / LOAD, rel=0.01)
    # In its buffer: the stream of the transfer, and 1/32 of the load rate
    # during the load.
    local = float(ev[ev["event"] == "loaded"]["detail"].iloc[0])
    assert local == pytest.approx(STREAM * (t_rdb - t_fork) + LOAD_READ * (t_loaded - t_rdb),
                                  rel=0.01)
    assert synced.summary["replica_fullsync_buffer_peak"] == pytest.approx(local, rel=0.01)
    assert t_online - t_loaded == pytest.approx(local / (500 * MIB), rel=0.01)
    # The primary's buffer peaks as the replica comes online: what was written
    # since the fork less what the replica took and what the socket holds, in
    # blocks of 20 440 B counted 20 504 B (Poisson count of 50 000 SETs: ±0.5 %;
    # a block, 20 KB, is 0.05 %).
    peak = synced.summary["mem_total_replication_buffers_peak"]
    expected = (STREAM * (t_online - t_fork) - local - SNDBUF) * 20_504 / BLOCK
    assert peak == pytest.approx(expected, rel=0.03)
    # Without the second channel the peak would be the whole 16.5 s of stream.
    assert peak < STREAM * (t_online - t_fork) / 5


def test_a_full_replica_buffer_hands_the_stream_back_to_the_primary():
    # Both limits 64 MiB (the replica's inherits the hard limit): the replica's
    # buffer fills in 64 MiB / s = 3.21 s, the main socket's 4 MiB in 0.20 s,
    # then the primary's 64 MiB in 3 272 blocks of 20 440 B, 3.20 s: a drop
    # 6.61 s after each fork, while the RDB (14 s) still crosses.
    r = simulate(_scenario(_dual()), progress=False)
    ev = r.replication
    forks = ev[ev["event"] == "fork"]["time"].to_numpy()
    drops = ev[ev["event"] == "dropped_hard_limit"]["time"].to_numpy()
    fill = (64 * MIB + SNDBUF + (math.ceil(64 * MIB / 20_504) - 1) * BLOCK) / STREAM
    assert len(drops) >= 2
    for t_fork, t_drop in zip(forks, drops, strict=False):
        assert t_drop - t_fork == pytest.approx(fill, abs=0.05)
    assert "rdb_transferred" not in set(ev["event"])
    assert r.summary["replica_fullsync_buffer_peak"] == pytest.approx(64 * MIB, rel=0.01)
    assert r.summary["sync_partial_ok"] == len(forks)


def test_a_stream_over_half_the_link_gets_half_and_a_disk_based_primary_forks_at_once():
    # 30 000 SET/s: s = 31.35 MB/s > 25 MB/s, so each connection gets half the
    # link and the RDB takes 407.6 / 25 = 16.3 s. The replica's buffer (1 GiB)
    # and the primary's limit (512 MiB; it grows by 6.35 MB/s for 16.3 s, then
    # 31.35 − 6.55 MB/s for the 1.94-s load) hold. With repl-diskless-sync no an
    # RDB channel still gets a socket child, at once: no 5-s delay.
    sc = _scenario(_dual(**{"full-sync-buffer-limit": "1gb"}), **{
        "client-output-buffer-limit": "replica 512mb 0 0", "repl-diskless-sync": "no"})
    data = sc.model_dump(by_alias=True)
    data["clients"][0]["rate"] = 30_000.0
    r = simulate(load_scenario(data), progress=False)
    t_full, t_fork, t_rdb = _times(r.replication, "full_resync", "fork", "rdb_transferred")
    assert t_fork - t_full < 0.15  # the fork's own stall, ~70 ms, at most
    assert t_rdb - t_fork == pytest.approx(RDB / (LINK / 2), rel=0.01)
    assert 30_000 * RESP_SET > LINK / 2  # the regime this test is about
    assert r.summary["replica_obuf_disconnections"] == 0


@pytest.mark.parametrize(("change", "field"), [
    ({"replicas": [_dual(), {"link-bandwidth": "1gbit"}]}, "replicas[1].dual-channel"),
    ({"replicas": [{"full-sync-buffer-limit": "1gb"}]}, "replicas[0].full-sync-buffer-limit"),
    ({"replicas": [_dual()], "redis-version": "6.2"}, "replicas[0].dual-channel"),
])
def test_dual_channel_settings_that_cannot_hold_name_the_field(change, field):
    data = _scenario().model_dump(by_alias=True)
    data.update(change)
    with pytest.raises(ScenarioError, match=field.replace("[", r"\[").replace("]", r"\]")):
        load_scenario(data)


def test_the_shipped_scenario_syncs_over_two_channels_where_one_loops():
    # scenarios/replica-dual-channel.yaml, by hand: 40K SET/s of 1 069 B
    # (s = 42.76 MB/s), a 4.172 GB RDB on a 1 Gbit link (125 MB/s). Two
    # channels: the RDB gets 125 − 42.76 MB/s (50.7 s), the replica's 2 GiB
    # fill in 50.2 s, so from fork + 50.2 s the primary keeps every byte until
    # the replica is online. One channel: the primary keeps every byte from the
    # fork and passes 2 GiB after 50.2 s, during the load: a drop each time.
    stream = 40_000 * (4 + 9 + 5 + 16 + 2 + 7 + 1024 + 2)
    limit = 2 * MIB * 1024
    path = "scenarios/replica-dual-channel.yaml"
    dual = simulate(load_scenario(path), progress=False)
    ev = dual.replication
    assert list(ev["event"]) == ["full_resync", "fork", "rdb_transferred", "loaded", "online"]
    t_fork, t_online = _times(ev, "fork", "online")
    peak = dual.summary["mem_total_replication_buffers_peak"]
    expected = (stream * (t_online - t_fork) - limit - SNDBUF) * 20_504 / BLOCK
    assert peak == pytest.approx(expected, rel=0.02)
    assert peak < limit
    assert dual.summary["replica_fullsync_buffer_peak"] == pytest.approx(limit, rel=0.001)
    data = load_scenario(path).model_dump(by_alias=True)
    data["replicas"][0]["dual-channel"] = False
    single = simulate(load_scenario(data), progress=False)
    ev = single.replication
    forks = ev[ev["event"] == "fork"]["time"].to_numpy()
    drops = ev[ev["event"] == "dropped_hard_limit"]["time"].to_numpy()
    assert len(drops) >= 2
    for t_f, t_d in zip(forks, drops, strict=False):
        # 2 GiB in 20 440-B blocks counted 20 504 B, at s: 50.1 s (±0.2 %).
        assert t_d - t_f == pytest.approx(limit * BLOCK / 20_504 / stream, rel=0.01)
