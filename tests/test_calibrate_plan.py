"""What `redsim calibrate` says it will do: its steps and their estimates come
from each step's own parameters (loads x repetitions, keys written, model
replays), it reports each step's start and end, and the file says what it lacks.

No server and no kernel: the estimates are arithmetic on a host whose speeds
are round numbers, worked by hand in the comments, and the fit's progress is
checked on a stand-in for the model whose CPU per SET is a/P + b + W*s exactly.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import yaml

from redsim.calibrate import ALL_PARTS, QUICK_PARTS, fragment, not_measured, plan, replay
from redsim.calibrate.measure import CPU_FULL, CpuLoad, CpuSettings, Measurement
from redsim.calibrate.solver import CpuPoint

# A host with round speeds: every redis-benchmark load runs 100,000 requests/s
# after 0.5 s of its own; keys are written at 100,000/s (their bytes, deletes and
# settling cost nothing); the model takes 1 s per run and 2 µs per simulated
# command (nothing per batch), 5 s to load its kernel.
ROUND = dataclasses.replace(
    plan.REFERENCE, bench_rps={(50, 1): 100_000.0}, bench_start_s=0.5, element_cost=0.5,
    fill_keys_per_s=100_000.0, fill_bytes_per_s=math.inf, unlink_keys_per_s=math.inf,
    settle_s=0.0,
    model_start_s=5.0, model_run_s=1.0, model_us_per_batch=0.0, model_us_per_command=2.0,
    fsync_s=0.01, write_bytes_per_s=2**26, fork_keys_per_s=100_000.0)

# The CPU part: two fitted loads and one check, as small as the arithmetic likes.
LOADS = (CpuLoad(50, 1, 200_000), CpuLoad(1, 1, 100_000))
CHECKS = (CpuLoad(1, 16, 300_000),)
SMALL = CpuSettings(loads=LOADS, checks=CHECKS, command_load=CpuLoad(50, 16, 100_000),
                    fit=replay.FitBudget(rounds=5, tol=0.01, duration=1.5, warmup=0.5,
                                         matching=2))


def _by_key(steps: list[plan.Step]) -> dict[str, plan.Step]:
    return {s.key: s for s in steps}


def test_quick_plans_the_cpu_steps_only_and_the_total_is_their_sum():
    steps = plan.plan(QUICK_PARTS, ("SET", "GET"), reps=3, cpu=SMALL, speed=ROUND)
    assert [s.key for s in steps] == ["cpu.loads", "cpu.fit", "cpu.commands"]
    s = _by_key(steps)
    # SET loads: 3 reps x (0.5 + 200,000/100,000 + 0.5 + 100,000/100,000
    #                      + 0.5 + 300,000/100,000) = 3 x 7.5 = 22.5 s
    assert s["cpu.loads"].estimate_s == pytest.approx(22.5)
    assert s["cpu.loads"].units == 9  # 3 loads x 3 repetitions: the bar's steps
    # A replay: 2 runs x (1 s + 2 simulated s x rate x 2 µs), at 100,000/s
    # (every shape is the one measured shape's rate): 2 x (1 + 0.4) = 2.8 s.
    # The fit, every round: 5 s to load the kernel + 2 fitted loads x (1 + 5
    # rounds) replays + 1 check replay = 5 + 12 x 2.8 + 2.8 = 41.4 s.
    assert s["cpu.fit"].estimate_s == pytest.approx(41.4)
    assert s["cpu.fit"].units == 2 * (1 + 5) + 1  # every replay the fit may run
    # GET: 3 reps x (a SET and a GET load, each 0.5 + 100,000/100,000) = 9 s.
    assert s["cpu.commands"].estimate_s == pytest.approx(9.0)
    # 22.5 + 41.4 + 9 = 72.9 s in all, and so the plan says.
    assert sum(x.estimate_s for x in steps) == pytest.approx(72.9)
    assert plan.describe(steps).startswith("plan: 3 step(s), about 1 min 13 s at ")


def test_the_estimates_follow_the_parameters():
    base = _by_key(plan.plan(("cpu",), ("SET", "GET"), 3, SMALL, speed=ROUND))
    twice = _by_key(plan.plan(("cpu",), ("SET", "GET"), 6, SMALL, speed=ROUND))
    assert twice["cpu.loads"].estimate_s == pytest.approx(2 * base["cpu.loads"].estimate_s)
    assert twice["cpu.commands"].estimate_s == pytest.approx(
        2 * base["cpu.commands"].estimate_s)
    assert twice["cpu.fit"].estimate_s == base["cpu.fit"].estimate_s  # medians, one fit
    # SET alone: its cost is the fit's, no command step.
    assert "cpu.commands" not in _by_key(plan.plan(("cpu",), ("SET",), 3, SMALL, speed=ROUND))
    # MGET has a per-element part: a second pair of loads with 10 keys, each
    # request 1 + 9 x 0.5 = 5.5 times as long: 3 x (1.5 + (0.5 + 5.5)) = 22.5 s more.
    mget = _by_key(plan.plan(("cpu",), ("SET", "GET", "MGET"), 3, SMALL, speed=ROUND))
    assert mget["cpu.commands"].estimate_s == pytest.approx(9.0 + 9.0 + 22.5)
    # A server on another machine: its sleeps are unknown and the lone-client
    # load is not fitted: 5 + 1 x 6 x 2.8 + 2.8 = 24.6 s.
    remote = _by_key(plan.plan(("cpu",), ("SET",), 3, SMALL, local=False, speed=ROUND))
    assert remote["cpu.fit"].estimate_s == pytest.approx(24.6)
    # The fit re-estimated at the rates the loads measured: the c=50 load at
    # 50,000/s (a replay 2 x (1 + 0.2) = 2.4 s): 5 + 6 x (2.4 + 2.8) + 2.8 = 39 s.
    refit = base["cpu.fit"].revise(rates={LOADS[0]: 50_000.0})
    assert refit == pytest.approx(39.0)


def test_every_part_has_a_step_with_its_own_figures():
    steps = _by_key(plan.plan(ALL_PARTS, ("SET",), 3, CPU_FULL, speed=ROUND))
    assert list(steps) == ["cpu.loads", "cpu.fit", "caches", "memory", "clients", "eviction",
                           "disk", "fork"]
    # The dataset sweep within 2 GiB: 3-byte values at 10 K, 100 K, 1 M, 3 M and
    # 10 M keys; 256 B (440 B a key with the dict's growth) to 3 M; 4 KB (an
    # entry 24, a key sds 32, a robj 16, a 5,120-B value class and a bucket's 8:
    # 5,200 B, 5,720 with growth) at 10 K, 100 K and 2 GiB / 5,720 = 375,434.
    # Per size 3 reps x GET and SET x (0.5 + 6 s at P=16, 0.5 + 1.5 s at P=1):
    # 51 s, 12 sizes: 612 s; writing 10 M + 3 M + 375,434 keys at 1 M/s: 13.375 s.
    assert steps["caches"].estimate_s == pytest.approx(612 + 13.375434)
    assert "4096 B: 10,000, 100,000, 375,434 keys" in steps["caches"].how
    # 100,000 keys at each of 3 value sizes, 100,000 keys/s: 3 s.
    assert steps["memory"].estimate_s == pytest.approx(3.0)
    assert "100,000 keys at 3, 100, 1000-byte values" in steps["memory"].how
    # Its three waits, 1.5 + 1.2 + 6 s.
    assert steps["clients"].estimate_s == pytest.approx(8.7)
    # 3 x (600,000 keys, 1 s of loads x 2 + 0.5 s each to start) = 3 x (6 + 2 x 3.5) = 39 s.
    assert steps["eviction"].estimate_s == pytest.approx(39.0)
    # min(200 x 0.01 s, 10 s) + 64 MB / 64 MB/s = 3 s.
    assert steps["disk"].estimate_s == pytest.approx(3.0)
    # 363,636 keys written (400 MB of 1,100 B): 3.636 s; BGSAVE 3 x 90,909 keys
    # and 3 x 363,636, at 100,000 keys/s: 2.727 + 10.909 s; 17.27 s in all.
    assert steps["fork"].estimate_s == pytest.approx(17.2727, rel=1e-4)
    # No directory to probe (a server on another machine, no --data-dir): no disk step.
    assert "disk" not in _by_key(plan.plan(ALL_PARTS, ("SET",), 3, data_dir=False))


def test_quick_is_the_cpu_part_of_a_full_calibration():
    quick = plan.plan(QUICK_PARTS, ("SET", "GET"), 3)
    full = plan.plan(ALL_PARTS, ("SET", "GET"), 3)
    assert quick == [s for s in full if s.part == "cpu"]
    # On the reference host it is planned well within 3 min.
    assert sum(s.estimate_s for s in quick) < 60


def test_progress_says_when_each_step_starts_and_ends():
    steps = plan.plan(QUICK_PARTS, ("SET", "GET"), 3, SMALL, speed=ROUND)
    said: list[str] = []
    progress = plan.Progress(steps, said.append, bars=False)
    with progress.step("cpu.loads") as bar:
        bar.update()
        bar.note("no bar: nothing drawn")
    with progress.step("not-planned"):
        pass
    # The plan's 22.5 s, and the 41.4 + 9 s of the steps after it.
    assert said[:2] == ["[1/3] CPU per request: ~22 s",
                        "[1/3] CPU per request: done in <1 s (estimated 22 s); about 50 s left"]
    assert len(said) == 2  # a step the plan does not have runs silently
    with progress.step("cpu.fit", rates={LOADS[0]: 50_000.0}):
        pass
    assert said[2] == "[2/3] fit in the model: ~39 s at the rates measured"
    assert [r["step"] for r in progress.record()] == ["cpu.loads", "cpu.fit"]
    assert progress.record()[1]["estimate_s"] == 39.0
    with pytest.raises(RuntimeError), progress.step("cpu.commands"):
        raise RuntimeError("a load failed")
    assert not said[-1].startswith("[3/3] CPU per command: done")  # no "done" after a failure


def test_a_kernel_to_compile_is_a_step_of_its_own(monkeypatch):
    # The fit's first model run would compile it unannounced, for minutes.
    from redsim import calibrate, kernel_compile
    from redsim.model import jit

    monkeypatch.setattr(jit, "kernel_compiled", lambda: False)
    monkeypatch.setattr(kernel_compile, "estimate_s", lambda: (55.0, "the last compile here"))
    (step,) = calibrate._compile_first()
    assert (step.key, step.part, step.estimate_s) == ("compile", "cpu", 55.0)
    monkeypatch.setattr(jit, "kernel_compiled", lambda: True)
    assert calibrate._compile_first() == []


def test_bars_are_off_without_a_terminal(monkeypatch):
    monkeypatch.delenv("REDSIM_NO_PROGRESS", raising=False)
    steps = plan.plan(QUICK_PARTS, ("SET",), 3, SMALL, speed=ROUND)
    assert plan.Progress(steps, lambda m: None).bars is False  # pytest's stderr is no TTY
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert plan.Progress(steps, lambda m: None).bars is True
    monkeypatch.setenv("REDSIM_NO_PROGRESS", "1")
    assert plan.Progress(steps, lambda m: None).bars is False


def test_the_fit_reports_each_replay(monkeypatch):
    # A stand-in model whose CPU per SET is exactly a/P + b + W*s at the costs
    # it is run with (s: 0.1 sleeps per SET at c=50, 1 for a lone client).
    def fake_run_matched(base, clients, pipeline, rate, runs=3, **kw):
        cpu = base["engine"]["cpu"]
        us = lambda v: float(v.removesuffix("us"))  # noqa: E731
        return (clients, pipeline, us(cpu["read"]) + us(cpu["write"]),
                us(cpu["commands"]["SET"]["fixed"]), us(cpu["wakeup"]))

    def fake_parts(result, iteration_us, wakeup_us):
        clients, pipeline, a, b, w = result
        s = 1.0 if clients == 1 else 0.1
        return replay.CpuParts(a / pipeline + b + w * s, a / pipeline, b, s, 0.0)

    monkeypatch.setattr(replay, "run_matched", fake_run_matched)
    monkeypatch.setattr(replay.CpuParts, "of", staticmethod(fake_parts))
    a, b, w = 4.0, 0.5, 15.0
    pts = [(CpuPoint(c, p, a / p + b + w * (1.0 if c == 1 else 0.1)), 1e5)
           for c, p in ((50, 1), (50, 16), (1, 1))]
    notes: list[str] = []
    fit = replay.fit_in_model("7.0", pts, pts[:1], 6.0, 0.8, 20.0, budget=SMALL.fit,
                              progress=notes.append)
    assert fit.io_us == pytest.approx(a, rel=0.02) and fit.wakeup_us == pytest.approx(w, rel=0.02)
    rounds = int(notes[-2].split("/")[0].removeprefix("round "))
    assert 1 <= rounds <= SMALL.fit.rounds and fit.rounds == rounds
    # One note per replay: 3 loads per round, the first round included, then the check.
    assert len(notes) == SMALL.fit.replays(3, 1, rounds) == 3 * (1 + rounds) + 1
    assert notes[0] == "round 0/5"
    assert notes[-1] == f"round {rounds}/5, worst load 0.0% off"


def test_the_file_says_what_a_quick_calibration_lacks(tmp_path):
    from redsim.config import load_scenario

    lacks = not_measured({p: "a quick calibration (--quick)" for p in ALL_PARTS
                          if p not in QUICK_PARTS}, ("SET", "GET"))
    assert list(lacks) == ["caches", "memory", "clients", "eviction", "disk", "fork",
                           "commands"]
    assert lacks["fork"]["defaults"] == ["host.fork-fixed", "host.fork-per-gb",
                                         "host.child-keys-per-sec"]
    assert "engine.cpu.commands.MGET" in lacks["commands"]["defaults"]
    ms = [Measurement("cpu.read", 1.5, "us", 0.1, 3, "m", "engine.cpu.read")]
    doc = fragment.build(ms, {"date": "x"}, None, lacks)
    out = tmp_path / "quick.yaml"
    fragment.write(doc, out)
    text = out.read_text()
    assert "# `not-measured`: what it lacks" in text
    assert yaml.safe_load(text)["not-measured"]["disk"]["why"] == "a quick calibration (--quick)"
    (tmp_path / "s.yaml").write_text("calibration: quick.yaml\n")
    assert float(load_scenario(tmp_path / "s.yaml").engine.cpu.read) == pytest.approx(1.5)
    # Combined with a full calibration, only what neither measured stays listed.
    full = fragment.build(ms, {}, None, {})
    assert "not-measured" not in fragment.combine([doc, full], {})
    assert fragment.combine([doc, doc], {})["not-measured"] == lacks


def test_quick_does_not_mix_with_only_or_combine(capsys):
    from redsim.cli import build_parser, main

    assert main(["calibrate", "--start", "--quick", "--only", "memory"]) == 2
    assert "--quick measures the CPU costs only" in capsys.readouterr().err
    assert main(["calibrate", "--quick", "--combine", "a.yaml"]) == 2
    # validate-model has its own --quick (its CI subset); both stay.
    p = build_parser()
    assert p.parse_args(["validate-model", "--quick"]).quick
    assert p.parse_args(["calibrate", "--start", "--quick", "--no-progress"]).no_progress
