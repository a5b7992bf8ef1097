"""A scenario's `calibration: FILE`: what it fills, what wins, and its errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from redsim.config import ScenarioError, load_scenario, scenario_hash

CAL = """\
redsim-calibration: 1
made: {date: '2026-11-24T14:32:49Z'}
values:
  engine:
    allocator-quantum: 16
    cpu:
      read: 1.75us
      write: 2.63us
      wakeup: 15.7us
      commands:
        SET: {fixed: 0.58us}
  host:
    fork-per-gb: 17.5ms
measurements:
  - {name: cpu.read, value: 1.75, unit: us, spread: 0.05, n: 3, method: fit}
"""


def _files(tmp: Path, cal: str = CAL, scenario: str = "") -> Path:
    (tmp / "cal").mkdir(exist_ok=True)
    (tmp / "cal" / "calibration.yaml").write_text(cal)
    sc = tmp / "scenario.yaml"
    sc.write_text("name: t\nduration: 1s\ncalibration: cal/calibration.yaml\n"
                  + textwrap.dedent(scenario))
    return sc


def test_values_fill_engine_and_host(tmp_path):
    s = load_scenario(_files(tmp_path))
    assert s.engine.cpu.read == 1.75
    assert s.engine.cpu.write == 2.63
    assert s.engine.cpu.wakeup == 15.7
    assert s.engine.cpu.commands["SET"].fixed == 0.58
    assert s.engine.allocator_quantum == 16
    assert s.host.fork_per_gb == pytest.approx(0.0175)
    assert s.calibration == str((tmp_path / "cal" / "calibration.yaml").resolve())


def test_the_scenarios_own_keys_and_overrides_win(tmp_path):
    sc = _files(tmp_path, scenario="engine:\n  cpu: {read: 9us}\n")
    s = load_scenario(sc, overrides=["engine.cpu.write=7us"])
    assert s.engine.cpu.read == 9.0  # the scenario's key
    assert s.engine.cpu.write == 7.0  # --set
    assert s.engine.cpu.wakeup == 15.7  # the calibration's


def test_calibration_argument_replaces_the_key(tmp_path):
    sc = _files(tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(CAL.replace("1.75us", "3us"))
    assert load_scenario(sc, calibration=other).engine.cpu.read == 3.0


def test_the_hash_follows_the_files_content_not_its_place(tmp_path):
    folders = [tmp_path / name for name in ("a", "b", "c")]
    for f in folders:
        f.mkdir()
    a = load_scenario(_files(folders[0]))
    b = load_scenario(_files(folders[1]))
    assert scenario_hash(a) == scenario_hash(b)
    # A measurement's wording changes the file but no value: still a new hash,
    # since the run's provenance names the exact file it used.
    c = load_scenario(_files(folders[2], CAL.replace("method: fit", "method: a fit")))
    assert scenario_hash(c) != scenario_hash(a)


@pytest.mark.parametrize("text, line, where, expected", [
    (CAL.replace("read: 1.75us", "read: fast"), 7, "values.engine.cpu.read", "a CPU cost"),
    (CAL.replace("  host:", "  server:"), 12, "values.server", "a section a calibration fills"),
    (CAL.replace("redsim-calibration: 1", "redsim-calibration: 2"), 1, "redsim-calibration",
     "format 1"),
    ("engine: {cpu: {read: 1us}}\n", None, "", "a calibration file written by"),
])
def test_mistakes_name_the_calibration_file_its_line_and_field(tmp_path, text, line, where,
                                                               expected):
    sc = _files(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(sc)
    e = err.value
    assert e.file == str((tmp_path / "cal" / "calibration.yaml").resolve())
    assert e.line == line
    assert e.location == where
    assert expected in e.expected


def test_a_missing_calibration_file_is_a_clean_error(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("calibration: nowhere.yaml\n")
    with pytest.raises(ScenarioError, match="nowhere.yaml"):
        load_scenario(sc)


def test_run_folder_names_it_relative_and_reloads(tmp_path):
    from redsim.simulation import Simulation

    s = load_scenario(_files(tmp_path, scenario="clients: [{mix: {GET: 1}}]\n"))
    out = tmp_path / "runs" / "r"
    Simulation(s, seed=1, progress=False).run().save(out, plots=False)
    saved = yaml.safe_load((out / "scenario.yaml").read_text())
    assert saved["calibration"] == "../../cal/calibration.yaml"
    again = load_scenario(out / "scenario.yaml")
    assert scenario_hash(again) == scenario_hash(s)
