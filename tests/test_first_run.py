"""The first run on a fresh install says it is compiling the kernel instead of
going silent for a minute, and the real-time factor it reports is the
simulation's alone, without the compile or the keyspace build (issue #17: a
first run reported "real-time factor 0.9")."""

from __future__ import annotations

import re
from pathlib import Path

from redsim import cli, simulation
from redsim.model import jit

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "web-cache.yaml"


def _run(tmp_path, monkeypatch, capsys, compiled: bool) -> tuple[str, str, list[int]]:
    calls: list[int] = []

    def fake_warm_up() -> float:
        calls.append(1)
        return 61.0

    monkeypatch.setattr(jit, "kernel_compiled", lambda: compiled)
    monkeypatch.setattr(simulation, "warm_up", fake_warm_up)
    code = cli.main(["run", str(SCENARIO), "--duration", "10", "--no-plots",
                     "--out", str(tmp_path / "run")])
    assert code == 0
    out, err = capsys.readouterr()
    return out, err, calls


def test_a_cold_cache_says_it_compiles_and_how_long_it_took(tmp_path, monkeypatch, capsys):
    out, err, calls = _run(tmp_path, monkeypatch, capsys, compiled=False)
    assert calls == [1]
    assert "compiling the simulation kernel" in err
    # The minutes it announces are the ones the README promises a new user
    # (both are set from a measured cold compile; they must not drift apart).
    said = re.search(r"about (\d+) minutes", err)
    promised = re.search(r"kernel with numba \(about (\d+) min",
                         (SCENARIO.parents[1] / "README.md").read_text())
    assert said and promised and said.group(1) == promised.group(1), err
    assert "compiled in 61 s" in err


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
