"""The first run on a fresh install says it is compiling the kernel instead of
going silent for minutes (and two cold processes compile it once), and the
real-time factor it reports is the simulation's alone, without the compile or
the keyspace build (issue #17: a first run reported "real-time factor 0.9")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redsim import cli, kernel_compile
from redsim.model import jit

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "web-cache.yaml"


def _run(tmp_path, monkeypatch, capsys, compiled: bool) -> tuple[str, str, list[int]]:
    calls: list[int] = []
    state = {"compiled": compiled}

    def fake_compile(show: bool) -> int:
        calls.append(1)
        state["compiled"] = True
        return 420

    monkeypatch.setenv("REDSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(kernel_compile, "_ready", False)
    monkeypatch.setattr(jit, "kernel_compiled", lambda: state["compiled"])
    monkeypatch.setattr(kernel_compile, "_compile_in_child", fake_compile)
    code = cli.main(["run", str(SCENARIO), "--duration", "10", "--no-plots",
                     "--out", str(tmp_path / "run")])
    assert code == 0
    out, err = capsys.readouterr()
    return out, err, calls


def test_a_cold_cache_says_it_compiles_why_how_long_and_where(tmp_path, monkeypatch, capsys):
    out, err, calls = _run(tmp_path, monkeypatch, capsys, compiled=False)
    assert calls == [1]
    assert "compiling the simulation kernel" in err
    assert str(tmp_path / "cache") in err  # where the cache goes
    # No compile measured on this machine yet (a fresh cache folder): the
    # estimate is the one measured on a 2-vCPU VM.
    said = re.search(r"about (\d+) s, as on a 2-vCPU VM", err)
    assert said and float(said.group(1)) == kernel_compile.REFERENCE_COMPILE_S, err
    assert re.search(r"compiled 420 kernel functions in \d+ s", err), err
    # The next estimate on this machine is the compile just measured.
    est, source = kernel_compile.estimate_s()
    assert source == "the last compile on this machine" and est < 60, (est, source)


def test_a_warm_cache_says_nothing_and_the_factor_is_the_simulations(tmp_path, monkeypatch,
                                                                     capsys):
    out, err, calls = _run(tmp_path, monkeypatch, capsys, compiled=True)
    assert calls == [] and "compiling" not in err
    m = re.search(r"wall time ([\d.]+) s \(building the keyspace ([\d.]+) s, simulating "
                  r"([\d.]+) s\); real-time factor of the simulation ([\d,.]+)", out)
    assert m, out
    wall, build, sim, rtf = (float(g.replace(",", "")) for g in m.groups())
    # 10 simulated seconds over the simulating time alone (both printed rounded
    # to 0.1 s, so compare within that rounding).
    assert abs(build + sim - wall) <= 0.11
    assert rtf >= 10 / (sim + 0.05) * 0.99


_COLD_PROCESS = """
import sys, time
from pathlib import Path
from redsim import kernel_compile
from redsim.model import jit
marker = Path(sys.argv[1])
jit.kernel_compiled = marker.exists
def fake_compile(show):
    with open(sys.argv[2], "a") as log:
        log.write("compiled\\n")
    time.sleep(2.0)
    marker.touch()
    return 420
kernel_compile._compile_in_child = fake_compile
kernel_compile.ensure_compiled(progress=False)
"""


def test_two_cold_processes_compile_once_and_the_second_waits(tmp_path):
    # Two processes start cold at once (two sweep workers, a notebook and a CLI
    # run): the first takes the lock and compiles, the second waits on the lock
    # and then finds the cache, so the compile happens once.
    env = dict(os.environ, REDSIM_CACHE_DIR=str(tmp_path / "cache"))
    marker, log = tmp_path / "compiled", tmp_path / "log"
    first = subprocess.Popen([sys.executable, "-c", _COLD_PROCESS, str(marker), str(log)],
                             env=env, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # the first holds the lock (its fake compile lasts 2 s)
    second = subprocess.run([sys.executable, "-c", _COLD_PROCESS, str(marker), str(log)],
                            env=env, capture_output=True, text=True, timeout=60)
    first_err = first.communicate(timeout=60)[1]
    assert first.returncode == 0 and second.returncode == 0, first_err + second.stderr
    assert log.read_text().splitlines() == ["compiled"]
    assert "waiting for pid" in second.stderr, second.stderr
    assert "compiling the simulation kernel" in first_err


def test_a_compile_that_fails_says_so_and_one_that_writes_no_cache_compiles_here(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("REDSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(kernel_compile, "_ready", False)
    monkeypatch.setattr(jit, "kernel_compiled", lambda: False)
    # The compiling process dies (numba's error went to its stderr): the
    # caller gets an error that says so, not a silent fall-back.
    monkeypatch.setattr(kernel_compile, "_child_command",
                        lambda show: [sys.executable, "-c", "import sys; sys.exit(3)"])
    try:
        kernel_compile.ensure_compiled(progress=False)
    except RuntimeError as e:
        assert "status 3" in str(e)
    else:
        raise AssertionError("a failed compile raised nothing")
    # The compiling process succeeds but no machine code is in the cache (an
    # unwritable cache folder): this process compiles for itself and says why.
    here: list[bool] = []
    monkeypatch.setattr(kernel_compile, "_child_command",
                        lambda show: [sys.executable, "-c", "print('compiled 5')"])
    monkeypatch.setattr(kernel_compile, "_compile_here", lambda show: here.append(show) or 7)
    assert kernel_compile.ensure_compiled(progress=False) is not None
    err = capsys.readouterr().err
    assert here == [False] and "is it writable?" in err and "compiled 7 kernel" in err, err


_REAL_COLD = """
import json, sys
from numba.core import event
rec = event.RecordingListener()
event.register("numba:compile", rec)
from redsim import kernel_compile
from redsim.model import jit
from redsim.driver import warm_up
took = kernel_compile.ensure_compiled(quiet=True)
warm_up()
print(json.dumps({"took": took, "cached": jit.kernel_compiled(),
                  "here": sum(1 for _, ev in rec.buffer if ev.is_start)}))
"""


@pytest.mark.slow
def test_a_cold_compile_runs_in_its_own_process_and_this_one_loads_it(tmp_path):
    # Compiled in the process that then simulates, the kernel ran S0 ~3x
    # slower (numba linked callers to the callees' unoptimised libraries);
    # compiled in a process of its own, the caller loads the cached,
    # whole-program code and compiles nothing itself, even for its own
    # warm-up run.
    env = dict(os.environ, REDSIM_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", _REAL_COLD], env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["took"] is not None and got["cached"], got
    assert got["here"] == 0, got
