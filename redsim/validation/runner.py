"""Run the validation experiments: real server, then model, then a verdict per row.

``validate()`` starts a throw-away ``redis-server`` (Debian's 7.0 package, or
``$REDSIM_REDIS_SERVER``), optionally calibrates the model on it
(``redsim calibrate``), and for each experiment: measures the real figure
``reps`` times (an experiment that ``bracket``s the calibration half of
them before it and the rest after), writes the row's tolerance down
(``max(floor, 3 × CV)`` of the real repetitions), runs the model, and judges
``|model / real − 1| ≤ tolerance``, ``real`` being the median of the
repetitions (the calibration's estimator too: a VM that slows down for one
repetition moves the median less than the mean). The table (CSV and
Markdown) and one figure per experiment go to the output folder; the table is
written after every row, so a failure part-way keeps the rows already
measured, and a figure that fails to draw costs nothing but that figure.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import math
import statistics
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from redsim.live.server import RedisServer
from redsim.validation.experiments import CPU_REPS, EXPERIMENTS, Experiment, Real
from redsim.validation.lab import Lab, mean_cv

CALIBRATION_REPS = CPU_REPS
"""Repetitions of each of the calibration's CPU loads: they join the CPU rows'
tolerance (``Experiment.calibrated_as``), and the model carries their median
into the comparison, so they are as many as a CPU row's."""


@dataclass
class Row:
    """One experiment's outcome."""

    name: str
    title: str
    unit: str
    real: float
    real_cv: float
    reps: int
    tolerance: float
    model: float
    error: float
    verdict: str
    note: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def markdown(rows: list[Row], header: str = "") -> str:
    lines = [header] if header else []
    lines += ["| experiment | unit | real (median of n, CV) | model | model/real − 1 | "
              "tolerance | verdict |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.title} | {r.unit} | {_fmt(r.real)} (n={r.reps}, {r.real_cv:.1%}) | "
                     f"{_fmt(r.model)} | {r.error:+.1%} | ±{r.tolerance:.0%} | "
                     f"**{r.verdict}**{' — ' + r.note if r.note else ''} |")
    return "\n".join(lines) + "\n"


def _figure(exp: Experiment, row: Row, values: list[float], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 2.4))
    lo, hi = row.real * (1 - row.tolerance), row.real * (1 + row.tolerance)
    ax.axvspan(lo, hi, color="tab:green", alpha=0.15, label=f"tolerance ±{row.tolerance:.0%}")
    ax.scatter(values, [1] * len(values), color="black", marker="|", s=300,
               label=f"real server ({len(values)} runs)")
    ax.scatter([row.model], [1], color="tab:red" if not row.passed else "tab:blue",
               marker="D", s=60, zorder=3, label=f"model ({row.verdict})")
    ax.set_yticks([])
    ax.set_xlabel(exp.unit)
    ax.set_title(exp.title, fontsize=9)
    xs = [*values, row.model, lo, hi]
    pad = 0.1 * (max(xs) - min(xs) or abs(row.real) or 1)
    ax.set_xlim(min(xs) - pad, max(xs) + pad)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=3,
              frameon=False)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)


@contextlib.contextmanager
def _repeating(lab: Lab, reps: int) -> Iterator[None]:
    """``lab.reps`` set to ``reps`` for the measurements in the block, and put back
    after it whatever happens (an experiment reads it as its repetition count)."""
    full, lab.reps = lab.reps, reps
    try:
        yield
    finally:
        lab.reps = full


def run_experiment(lab: Lab, exp: Experiment, before: Real | None = None,
                   pooled: list[float] | tuple[float, ...] = ()) -> tuple[Row, list[float]]:
    """Measure (the rest of the repetitions, after ``before``), set the
    tolerance (over this row's repetitions and ``pooled``, the calibration's
    repetitions of the same load), model, judge."""
    with _repeating(lab, max(exp.reps - (len(before.values) if before else 0), 1)):
        real = exp.real(lab) if before is None else Real.combine([before, exp.real(lab)])
    _, own_cv = mean_cv(real.values)
    median = statistics.median(real.values)
    _, cv = mean_cv([*real.values, *pooled])
    tolerance = max(exp.floor, 3 * cv)  # written down before the model runs
    model = float(exp.model(lab, real))
    error = model / median - 1 if median else math.inf
    verdict = "pass" if abs(error) <= tolerance else "FAIL"
    runs = (f"the {len(real.values) + len(pooled)} real runs, the calibration's "
            f"{len(pooled)} included" if pooled else "the real runs")
    note = "" if tolerance == exp.floor else f"3×CV of {runs} ({3 * cv:.0%}) > floor"
    if verdict != "pass" and exp.known_gap:
        note = "; ".join(n for n in (note, exp.known_gap) if n)
    return Row(exp.name, exp.title, exp.unit, median, own_cv, len(real.values), tolerance, model,
               error, verdict, note), real.values


def validate(out: Path, *, quick: bool = False, calibrate: bool = True,
             only: tuple[str, ...] = (), say: Callable[[str], None] = print) -> list[Row]:
    """Run the experiments (all, or the quick subset, or ``only`` those) and write
    ``out/validation.csv``, ``out/validation.md`` and ``out/<name>.png``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = [e for e in EXPERIMENTS if (not only or e.name in only) and (not quick or e.quick)]
    unknown = sorted(set(only) - {e.name for e in EXPERIMENTS})
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; known: "
                         + ", ".join(e.name for e in EXPERIMENTS))
    rows: list[Row] = []
    t0 = time.monotonic()
    with RedisServer() as server:
        version = server.version()
        say(f"redis-server {version} on 127.0.0.1:{server.port} (pid {server.pid}); "
            f"{len(chosen)} experiment(s)")
        lab = Lab(server, None, ".".join(version.split(".")[:2]), quick=quick)
        before: dict[str, Real] = {}
        early = [e for e in chosen if e.bracket]
        if early:
            say(f"half the repetitions of {', '.join(e.name for e in early)} before the "
                "calibration (the others after it: the host drifts)")
            for exp in early:
                with _repeating(lab, max(exp.reps // 2, 1)):
                    try:
                        before[exp.name] = exp.real(lab)
                    except Exception:  # noqa: BLE001 - measured again after, reported there
                        traceback.print_exc()
        cal = None
        if calibrate:
            from redsim.calibrate import calibrate as run_calibration

            cal = out / "calibration.yaml"
            say("calibrating the model on this server (redsim calibrate)")
            run_calibration(cal, host=server.host, port=server.port, can_write=True,
                            parts=("cpu", "memory") if quick else
                            ("cpu", "memory", "eviction", "disk", "fork"),
                            reps=CALIBRATION_REPS, say=lambda m: say("  " + m))
        lab.calibration = cal
        pooled = _calibration_repetitions(cal) if cal is not None else {}
        header = (f"Redis {version} (Debian package), {'calibrated on it' if cal else 'defaults'}"
                  f", {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d}")
        for exp in chosen:
            say(f"{exp.name}: {exp.title}")
            try:
                row, values = run_experiment(lab, exp, before.get(exp.name),
                                             pooled.get(exp.calibrated_as, ()))
            except Exception as exc:  # noqa: BLE001 - a broken row is reported, not fatal
                traceback.print_exc()
                row, values = Row(exp.name, exp.title, exp.unit, math.nan, math.nan, 0,
                                  exp.floor, math.nan, math.nan, "ERROR",
                                  f"{type(exc).__name__}: {exc}"), []
            rows.append(row)
            say(f"  real {_fmt(row.real)} {exp.unit} (CV {row.real_cv:.1%}), model "
                f"{_fmt(row.model)}, {row.error:+.1%} vs ±{row.tolerance:.0%}: {row.verdict}")
            _write_tables(rows, out, header)
            if values:
                try:
                    _figure(exp, row, values, out / f"{exp.name}.png")
                except Exception as exc:  # noqa: BLE001 - a figure never costs the data
                    say(f"  (figure not drawn: {exc})")
    say(f"{sum(r.passed for r in rows)} of {len(rows)} within tolerance, "
        f"{time.monotonic() - t0:.0f} s; {out}/validation.md")
    return rows


def _calibration_repetitions(path: Path) -> dict[str, list[float]]:
    """Each measurement's repetitions in a calibration file, by name (those that
    keep them)."""
    import yaml

    doc = yaml.safe_load(Path(path).read_text()) or {}
    return {m["name"]: [float(v) for v in m["values"]]
            for m in doc.get("measurements", []) if m.get("values")}


def _write_tables(rows: list[Row], out: Path, header: str) -> None:
    with open(out / "validation.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(asdict(rows[0])))
        w.writeheader()
        for r in rows:
            w.writerow(asdict(r))
    (out / "validation.md").write_text(markdown(rows, header + "\n"))
