"""Scripts (``model/scripts.py``): EVAL / EVALSHA / FCALL with a run time, and
the ``-BUSY`` replies past ``busy-reply-threshold`` (``src/script.c:scriptInterrupt``,
``src/networking.c:processEventsWhileBlocked``)."""

from __future__ import annotations

import pytest

from redsim import load_scenario, simulate
from redsim.config.errors import ScenarioError
from redsim.model.scripts import BUSY_REPLY_BYTES


def _run(script="300ms", threshold=100, ping_think="20ms", sample=0.1, **cpu):
    # The reference host's experiment (results/calibration/amd-epyc-2vcpu/
    # collections/reads-keys-eval.md §4): one connection sends a ~300 ms EVAL,
    # another PINGs every 20 ms. Here the EVAL is sent at 0.5 s (its client's
    # fixed think) and the next would be past the 1 s run.
    sc = {"name": "busy", "duration": 1.0, "sample-interval": sample,
          "server": {"save": "", "busy-reply-threshold": threshold},
          "engine": {"cpu": cpu},
          "clients": [
              {"name": "script", "processes": 1, "think": "0.5s",
               "mix": [{"command": "EVAL", "duration": script}], "keyspace": {"keys": 10}},
              {"name": "ping", "processes": 1, "think": ping_think, "mix": ["PING"],
               "keyspace": {"keys": 10}}]}
    return simulate(load_scenario(sc), seed=1)


def test_a_script_past_the_threshold_answers_the_others_busy():
    # Live (5 trials, busy-reply-threshold 100, a 302-366 ms script, a PING
    # every ~20 ms): the PING sent during the first 100 ms is answered at
    # 100.3-100.6 ms after the EVAL; every later one within 0.2-0.5 ms, -BUSY;
    # 10 -BUSY replies for the ~300 ms scripts.
    # Here: the PING client sends one every 20 ms + its ~0.2 ms round trip, so the
    # held PING left 0-20 ms after the EVAL began (waits 80-100 ms), and
    # (300 - 100) / 20.2 ≈ 9.9 more arrive while the script is timed out: the
    # held one and those, 10 or 11 in all, each answered -BUSY.
    s = _run().summary
    assert 10 <= s["ping.busy_rejected"] <= 11
    assert s["busy_rejected"] == s["ping.busy_rejected"]
    assert 0.080 <= s["ping.latency_max_s"] <= 0.1005
    # After the threshold a PING waits for the script's next hook (lua-hook,
    # 260 µs at most) plus its ~0.2 ms round trip and the pass's ~10 µs: all
    # but the held one under 0.5 ms.
    assert s["ping.latency_p90_s"] < 0.5e-3
    # The script's own reply leaves when it ends: 300 ms + its fixed part + the wire.
    assert s["script.latency_max_s"] == pytest.approx(0.300, abs=0.002)
    assert s["script.requests_completed"] == 1


def test_below_the_threshold_nobody_is_answered_until_the_script_ends():
    # Threshold 0 (never) and a script under the threshold: Redis serves no one
    # while it runs, so the PING that arrives first waits for all of it.
    for threshold, script in ((0, "300ms"), (100, "60ms")):
        s = _run(script=script, threshold=threshold).summary
        length = float(script.removesuffix("ms")) / 1000
        assert s["busy_rejected"] == 0
        assert length - 0.0205 <= s["ping.latency_max_s"] <= length + 0.0005


def test_the_hook_interval_sets_how_long_a_busy_reply_takes():
    # With a check every 2 ms a PING arriving while the script is timed out
    # waits for the next hook, uniform over 0-2 ms: a mean near 1 ms plus its
    # ~0.2 ms round trip, none past 2.3 ms. The 50 ms windows 0.65-0.8 s are
    # inside the timed-out part (the script runs 0.5-0.8 s, the held PING
    # leaves at 0.6 s); ~9 PINGs each, their mean within 3 sd (0.58 ms / 3)
    # of 1.2 ms. The default 260 µs hooks give 0.2 + 0.13 ms, sd 0.025 ms.
    # (300 - 100) / (5 + ~1.2) ≈ 32 PINGs after the threshold, (300 - 100) /
    # (5 + 0.33) ≈ 38 with the shorter hook.
    for hook, low, high, n_lo, n_hi in ((2000, 0.6e-3, 1.8e-3, 28, 36),
                                        (260, 0.25e-3, 0.45e-3, 34, 42)):
        # Exponential think: PINGs at random phases of the hooks (a fixed 5 ms
        # can fall in step with them).
        r = _run(lua_hook=hook, ping_think={"distribution": "exponential", "mean": "5ms"},
                 sample=0.05)
        busy = r.timeseries.loc[(r.timeseries.index > 0.675) & (r.timeseries.index < 0.825)]
        assert len(busy) == 3
        assert (low <= busy["latency_mean"]).all() and (busy["latency_mean"] <= high).all()
        assert (busy["latency_max"] < 2.3e-3).all()
        assert n_lo <= r.summary["ping.busy_rejected"] <= n_hi


def test_busy_reply_bytes_are_redis_own():
    # src/server.c shared.slowevalerr, with its CRLF.
    assert BUSY_REPLY_BYTES == len("-BUSY Redis is busy running a script. You can only call "
                                   "SCRIPT KILL or SHUTDOWN NOSAVE.") + 2


def test_a_duration_on_a_command_that_is_not_a_script_is_refused():
    sc = {"name": "x", "duration": 1.0,
          "clients": [{"mix": [{"command": "GET", "duration": "1ms"}]}]}
    with pytest.raises(ScenarioError, match=r"duration.*EVAL"):
        load_scenario(sc)


def test_lua_time_limit_is_busy_reply_thresholds_old_name():
    sc = {"name": "x", "duration": 1.0, "server": {"lua-time-limit": 250}, "clients": [{}]}
    assert load_scenario(sc).server.busy_reply_threshold == 250
