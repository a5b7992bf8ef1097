"""The validation runner's bookkeeping, without a server: how repetitions taken
before and after the calibration combine, and how a row is judged."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from redsim.validation.experiments import Experiment, Real
from redsim.validation.runner import run_experiment


def test_repetitions_from_two_moments_combine():
    # Rates weighted by repetitions: (60k x 1 + 90k x 2) / 3 = 80k.
    r = Real.combine([Real([9.0], {"rate": 60e3}), Real([10.0, 11.0], {"rate": 90e3})])
    assert r.values == [9.0, 10.0, 11.0]
    assert r.detail["rate"] == pytest.approx(80e3)
    # A detail kept per repetition (a list) is joined in the same order.
    r = Real.combine([Real([9.0], {"rates": [60e3]}), Real([10.0, 11.0], {"rates": [90e3, 80e3]})])
    assert r.detail["rates"] == [60e3, 90e3, 80e3]


def _exp(values_after, reps=3):
    seen = {}

    def real(lab):
        seen["reps"] = lab.reps
        return Real(values_after[:lab.reps], {"rate": 1.0})

    def model(lab, real):
        seen["real"] = real
        return 10.0

    return Experiment("x", "x", "us", 0.20, "test", True, real, model, bracket=True,
                      reps=reps), seen


def test_a_bracketing_row_measures_the_rest_after_and_judges_on_all():
    exp, seen = _exp([10.0, 14.0, 99.0])
    lab = SimpleNamespace(reps=3)
    row, values = run_experiment(lab, exp, Real([6.0], {"rate": 1.0}))
    assert seen["reps"] == 2 and lab.reps == 3  # two after, and the lab is put back
    assert values == [6.0, 10.0, 14.0] and seen["real"].values == values
    # mean 10, sample sd 4: CV 40 %, so the tolerance is 3 x 40 % = 120 % (> floor)
    assert row.real == pytest.approx(10.0)
    assert row.tolerance == pytest.approx(1.2)
    assert row.verdict == "pass" and row.error == pytest.approx(0.0)


def test_the_figure_compared_is_the_median_of_the_repetitions():
    # Five repetitions, two of them before the calibration: 6, 7 | 10, 11, 30.
    # One slow repetition (30) pulls the mean to 12.8 but not the median, 10,
    # which the model's 10 matches; the tolerance still counts the 30: mean
    # 12.8, sample sd sqrt((6.8^2 + 5.8^2 + 2.8^2 + 1.8^2 + 17.2^2) / 4)
    # = sqrt(386.8 / 4) = 9.83, CV 76.8 %, so 3 x CV = 230 %.
    exp, seen = _exp([10.0, 11.0, 30.0, 99.0], reps=5)
    lab = SimpleNamespace(reps=3)
    row, values = run_experiment(lab, exp, Real([6.0, 7.0], {"rate": 1.0}))
    assert seen["reps"] == 3 and lab.reps == 3
    assert values == [6.0, 7.0, 10.0, 11.0, 30.0]
    assert row.real == 10.0 and row.error == 0.0 and row.reps == 5
    assert row.tolerance == pytest.approx(3 * (386.8 / 4) ** 0.5 / 12.8, rel=1e-9)


def test_back_to_back_repetitions_keep_the_floor():
    exp, _ = _exp([10.0, 10.1, 9.9])
    row, _ = run_experiment(SimpleNamespace(reps=3), exp)
    assert row.tolerance == 0.20  # CV 1 %: 3 x CV = 3 % < the 20 % floor


def test_the_module_command_is_redsim_validate_model():
    # `python -m redsim.validation` is `redsim validate-model`: same parser, same
    # options (no server needed to ask for its help).
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "redsim.validation", "--help"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: redsim validate-model")
    assert "--quick" in p.stdout and "--only" in p.stdout


def test_the_calibrations_repetitions_of_the_load_join_the_tolerance():
    # This row: 10, 10, 10 (CV 0); the calibration measured the same load at
    # 12, 12, 12. Over the six: mean 11, sample sd sqrt(6/5) = 1.0954, CV 9.96 %,
    # so 3 x CV = 29.9 % > the 20 % floor. The compared figure stays this row's 10.
    exp, _ = _exp([10.0, 10.0, 10.0])
    row, values = run_experiment(SimpleNamespace(reps=3), exp, pooled=[12.0, 12.0, 12.0])
    assert values == [10.0, 10.0, 10.0] and row.real == 10.0
    assert row.tolerance == pytest.approx(3 * (6 / 5) ** 0.5 / 11, rel=1e-9)
    assert "the 6 real runs, the calibration's 3 included" in row.note
    assert row.real_cv == 0.0  # the row's own runs; the pooled CV is in the note
