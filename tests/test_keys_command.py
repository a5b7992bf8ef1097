"""KEYS (``src/db.c:keysCommand``): a walk of every key of the db on the main
thread, at the reference host's measured cost per key and per match
(``model/commands.py``)."""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.model.commands import COMMANDS


def _run(keys, count):
    # The stall worked by hand is the command table's: no cache-miss costs on top.
    sc = {"name": "keys", "duration": 1.0, "sample-interval": 0.1, "server": {"save": ""},
          "engine": {"cpu": {"miss": "none"}},
          "clients": [
              {"name": "web", "processes": 1, "think": "1ms", "mix": {"GET": 1},
               "keyspace": {"keys": keys}},
              {"name": "ops", "processes": 1, "think": "0.5s",
               "mix": [{"command": "KEYS", "count": count}], "keyspace": {"keys": keys}}]}
    return simulate(load_scenario(sc), seed=1)


def test_the_reference_hosts_figures_are_the_tables():
    # results/calibration/amd-epyc-2vcpu/collections/reads-keys-eval.md:
    # KEYS nomatch:* 112 ns per key at 1M keys, 132 at 5M; KEYS * less that, 261
    # ns per match.
    keys = COMMANDS["KEYS"]
    assert 0.112 <= keys.per_key_scanned_us <= 0.132
    assert keys.per_element_us == pytest.approx(0.261, abs=0.005)


@pytest.mark.parametrize("keys, count", [(100_000, 10), (400_000, 1000)])
def test_keys_blocks_the_main_thread_for_the_whole_keyspace(keys, count):
    # One KEYS at 0.5 s (after its think time; the next would be past 1 s) over
    # `keys` preloaded keys: 1 µs + 0.12 µs × keys + 0.26 µs × matches on the
    # main thread (100,000 keys: 12.0036 ms; 400,000
    # keys and 1,000 matches: 48.26 ms). The web client's GET sent meanwhile
    # waits for it: its worst latency is that, give or take its own ~0.3 ms
    # round trip and the 1 ms it may have just sent before.
    cmd = COMMANDS["KEYS"]
    stall = (cmd.fixed_us + cmd.per_key_scanned_us * keys + cmd.per_element_us * count) * 1e-6
    r = _run(keys, count)
    assert r.summary["web.latency_max_s"] == pytest.approx(stall, abs=0.6e-3)
    assert r.summary["ops.requests_completed"] == 1
