"""Running sweeps: seeds, reruns, a failing point, resume after a kill, executors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redsim.driver
from redsim.sweep import SweepError, load_sweep, run_sweep
from tests.engine_helpers import ZERO_OVERHEAD

BASE = {
    "name": "tiny", "duration": 0.5, "warmup": 0, "sample-interval": 0.1, "seed": 11,
    "engine": {"cpu": {**ZERO_OVERHEAD, "commands": {"GET": {"fixed": "20us"}}}},
    "clients": [{"kind": "open", "rate": 2000, "processes": 1, "pool": {"max-size": 64},
                 "mix": {"GET": 1}, "keyspace": {"keys": 1000}}],
}


def _sweep(reps: int = 2, rates=(1000, 4000), costs=("20us", "60us")) -> dict:
    return {"name": "tiny", "base": BASE, "replications": reps, "axes": [
        {"name": "rate", "path": "clients[0].rate", "values": list(rates)},
        {"name": "cost", "path": "engine.cpu.commands.GET.fixed", "values": list(costs)}]}


def _tables(out: Path) -> tuple[bytes, bytes]:
    return (out / "runs.csv").read_bytes(), (out / "aggregate.csv").read_bytes()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The uninterrupted sweep, in-process."""
    out = tmp_path_factory.mktemp("ref")
    run_sweep(load_sweep(_sweep()), out, jobs=1, progress=False)
    return out


def test_tables_have_a_row_per_run_and_intervals_per_point(reference) -> None:
    runs = pd.read_parquet(reference / "runs.parquet")
    agg = pd.read_parquet(reference / "aggregate.parquet")
    assert len(runs) == 4 * 2 and len(agg) == 4
    assert list(runs.columns[:7]) == ["point", "replication", "seed", "rate", "cost",
                                      "cost_label", "status"]
    assert set(runs["cost"]) == {20.0, 60.0} and set(runs["cost_label"]) == {"20us", "60us"}
    # Utilisation is rate x cost (zero overheads): 4000/s x 60 µs = 0.24; the
    # aggregate's interval brackets the replication mean.
    row = agg[(agg["rate"] == 4000) & (agg["cost"] == 60.0)].iloc[0]
    assert row["utilisation_mean"] == pytest.approx(0.24, rel=0.1)
    assert row["utilisation_low"] <= row["utilisation_mean"] <= row["utilisation_high"]
    assert row["burst_probability"] == 0 and row["runs"] == 2


def test_replications_differ_and_share_seeds_across_points(reference) -> None:
    runs = pd.read_parquet(reference / "runs.parquet")
    assert list(runs["seed"]) == [11, 12] * 4  # root seed 11 (the base's) + r
    a = runs[runs["replication"] == 0]["requests_completed"].to_numpy()
    b = runs[runs["replication"] == 1]["requests_completed"].to_numpy()
    assert (a != b).any()  # independent streams: Poisson counts differ
    # Common random numbers: replication 0 sees the same arrivals whatever the cost,
    # so at equal rate the issued counts agree across the cost axis.
    r0 = runs[runs["replication"] == 0]
    for rate in (1000, 4000):
        issued = r0[r0["rate"] == rate]["requests_issued_total"]
        assert issued.nunique() == 1


def test_rerun_is_byte_identical(reference, tmp_path) -> None:
    run_sweep(load_sweep(_sweep()), tmp_path, jobs=1, progress=False)
    assert _tables(tmp_path) == _tables(reference)


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path, monkeypatch) -> None:
    real = redsim.driver.simulate

    def flaky(scenario, seed=None, progress=None, **kw):
        if scenario.clients[0].rate == 4000 and seed == 12:
            raise RuntimeError("disk on fire")
        return real(scenario, seed=seed, progress=progress, **kw)

    monkeypatch.setattr(redsim.driver, "simulate", flaky)
    res = run_sweep(load_sweep(_sweep()), tmp_path, jobs=1, progress=False)
    bad = res.runs[res.runs["status"] == "error"]
    assert len(res.runs) == 8 and len(bad) == 2  # rate 4000 x both costs, replication 1
    assert bad["error"].str.contains("RuntimeError: disk on fire").all()
    assert bad["utilisation"].isna().all()
    agg = res.aggregate
    assert list(agg["errors"]) == [0, 0, 1, 1]
    assert list(agg["runs"]) == [2, 2, 2, 2]


def test_an_occupied_folder_needs_resume(reference, tmp_path) -> None:
    with pytest.raises(SweepError, match="--resume"):
        run_sweep(load_sweep(_sweep()), reference, jobs=1, progress=False)


class _Kill(Exception):
    pass


@pytest.mark.slow  # six sweeps, each interrupted and resumed: ~10 s
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(k=st.integers(min_value=0, max_value=7))
def test_resume_after_interruption_loses_and_duplicates_nothing(reference, tmp_path_factory,
                                                                k) -> None:
    out = tmp_path_factory.mktemp("resume")
    spec = load_sweep(_sweep())
    stored = []

    def stop_after_k(rec):
        stored.append((rec["key"], rec["seed"]))
        if len(stored) > k:
            raise _Kill

    with pytest.raises(_Kill):
        run_sweep(spec, out, jobs=1, progress=False, on_stored=stop_after_k)
    # The tables written on the way out hold exactly the finished runs.
    assert len(pd.read_csv(out / "runs.csv")) == k + 1
    again = []
    res = run_sweep(spec, out, jobs=1, progress=False, resume=True,
                    on_stored=lambda rec: again.append((rec["key"], rec["seed"])))
    assert res.ran == 8 - (k + 1) and not set(again) & set(stored)
    assert _tables(out) == _tables(reference)


@pytest.mark.slow  # worker processes, killed and resumed: ~20 s
def test_resume_after_sigkill_of_a_parallel_sweep(tmp_path) -> None:
    # A real kill -9 of `redsim sweep --jobs 2` once some runs are on disk: every
    # file left is whole, and --resume completes to the uninterrupted tables.
    spec = _sweep(reps=6)  # 24 runs: the kill lands part-way
    ref = tmp_path / "ref"
    run_sweep(load_sweep(spec), ref, jobs=1, progress=False)
    sweep_file = tmp_path / "tiny.yaml"
    sweep_file.write_text(json.dumps(spec))  # JSON is YAML
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "redsim", "sweep", str(sweep_file), "--out", str(out),
           "--jobs", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list((out / "runs").glob("*.json"))) >= 2:
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    files = list((out / "runs").glob("*.json"))
    assert 2 <= len(files) < 24
    for f in files:
        json.loads(f.read_text())  # whole
    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert _tables(out) == _tables(ref)


@pytest.mark.slow  # a process pool and a dask cluster: ~15 s
def test_local_pool_and_dask_give_the_tables_of_a_serial_run(reference, tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    run_sweep(load_sweep(_sweep()), tmp_path / "pool", jobs=2, progress=False)
    assert _tables(tmp_path / "pool") == _tables(reference)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        run_sweep(load_sweep(_sweep()), tmp_path / "dask", executor="dask",
                  scheduler=client, progress=False)
    assert _tables(tmp_path / "dask") == _tables(reference)


def test_a_worker_with_another_model_is_refused(tmp_path, monkeypatch) -> None:
    # A Dask worker with another redsim returns figures of another model: they are
    # reported as lost, not stored, so --resume reruns them on a matching worker.
    import redsim.sweep.runner as runner

    monkeypatch.setattr(runner, "model_version", lambda: "another-model")
    res = run_sweep(load_sweep(_sweep(reps=1)), tmp_path, jobs=1, progress=False)
    assert len(res.lost) == 4 and "install the same redsim" in res.lost[0]
    assert res.runs.empty and not list((tmp_path / "runs").glob("*.json"))
