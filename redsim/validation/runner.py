"""Run the validation experiments: real server, then model, then a verdict per row.

``validate()`` starts a throw-away ``redis-server`` (Debian's 7.0 package, or
``$REDSIM_REDIS_SERVER``), optionally calibrates the model on it
(``redsim calibrate``), and for each experiment: measures the real figure
``reps`` times (an experiment that ``bracket``s the calibration half of
them before it and the rest after), writes the row's tolerance down
(``max(floor, 3 × CV)`` of the real repetitions), runs the model, and judges
``|model / real − 1| ≤ tolerance``, ``real`` being the median of the
repetitions (the calibration's estimator too: a VM that slows down for one
repetition moves the median less than the mean). A tolerance wider than the
experiment's cap makes the row *inconclusive* (host noise), not a pass; such
a row is measured once more when the host is quieter (its busy cores are
read from ``/proc/stat`` before every row), and stays inconclusive if it is
still too noisy. The table (CSV and
Markdown) and one figure per experiment go to the output folder; the table is
written after every row, so a failure part-way keeps the rows already
measured, and a figure that fails to draw costs nothing but that figure.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import math
import os
import statistics
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from redsim.live.server import RedisServer
from redsim.validation.experiments import CPU_REPS, EXPERIMENTS, Experiment, Real
from redsim.validation.held_out import HELD_OUT, WORKLOADS
from redsim.validation.lab import Lab, mean_cv

CALIBRATION_REPS = CPU_REPS
"""Repetitions of each of the calibration's CPU loads: they join the CPU rows'
tolerance (``Experiment.calibrated_as``), and the model carries their median
into the comparison, so they are as many as a CPU row's."""


QUIET_CORES = 0.5
"""Busy cores of the host's own (other) work below which it counts as quiet."""
QUIET_WAIT_S = 60.0
"""How long an inconclusive row waits for a quiet host before it is measured again."""


def host_busy_cores(interval_s: float = 1.0) -> float:
    """Cores the whole host kept busy over the next ``interval_s`` (``/proc/stat``:
    all but idle and iowait); nan where it cannot be read."""
    def read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)

    try:
        t0, i0 = read()
        time.sleep(interval_s)
        t1, i1 = read()
    except (OSError, ValueError, IndexError):
        return math.nan
    ticks = os.sysconf("SC_CLK_TCK") * interval_s
    return max(0.0, ((t1 - t0) - (i1 - i0)) / ticks)


def wait_for_quiet(say: Callable[[str], None]) -> float:
    """Wait (up to ``QUIET_WAIT_S``) until the host's busy cores fall below
    ``QUIET_CORES``; returns the last figure."""
    deadline = time.monotonic() + QUIET_WAIT_S
    busy = host_busy_cores()
    while busy >= QUIET_CORES and time.monotonic() < deadline:
        say(f"  waiting for a quieter host ({busy:.1f} cores busy)")
        time.sleep(4.0)
        busy = host_busy_cores()
    return busy


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
    cap: float = math.nan
    host_busy: float = math.nan
    """Cores the host kept busy in the second before the row's real runs."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def inconclusive(self) -> bool:
        return self.verdict == "inconclusive"


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def markdown(rows: list[Row], header: str = "") -> str:
    lines = [header] if header else []
    lines += ["| experiment | unit | real (median of n, CV) | model | model/real − 1 | "
              "tolerance (cap) | verdict |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        cap = f" (cap ±{r.cap:.0%})" if math.isfinite(r.cap) else ""
        lines.append(f"| {r.title} | {r.unit} | {_fmt(r.real)} (n={r.reps}, {r.real_cv:.1%}) | "
                     f"{_fmt(r.model)} | {r.error:+.1%} | ±{r.tolerance:.0%}{cap} | "
                     f"**{r.verdict}**{' — ' + r.note if r.note else ''} |")
    lines.append("")
    lines.append(summary(rows))
    return "\n".join(lines) + "\n"


def summary(rows: list[Row]) -> str:
    """How many rows passed, failed, were inconclusive or broke."""
    n = {v: sum(r.verdict == v for r in rows) for v in ("pass", "FAIL", "inconclusive", "ERROR")}
    return (f"{n['pass']} pass, {n['FAIL']} FAIL, {n['inconclusive']} inconclusive (the real "
            f"runs' spread wider than the row's cap), {n['ERROR']} error, of {len(rows)}")


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
    runs = (f"the {len(real.values) + len(pooled)} real runs, the calibration's "
            f"{len(pooled)} included" if pooled else "the real runs")
    if tolerance > exp.cap:
        verdict = "inconclusive"
        note = (f"host noise: 3×CV of {runs} is {3 * cv:.0%}, wider than the cap "
                f"±{exp.cap:.0%}")
    else:
        verdict = "pass" if abs(error) <= tolerance else "FAIL"
        note = "" if tolerance == exp.floor else f"3×CV of {runs} ({3 * cv:.0%}) > floor"
    if verdict == "FAIL" and exp.known_gap:
        note = "; ".join(n for n in (note, exp.known_gap) if n)
    return Row(exp.name, exp.title, exp.unit, median, own_cv, len(real.values), tolerance, model,
               error, verdict, note, exp.cap), real.values


def calibrated_commands(chosen: list[Experiment]) -> tuple[str, ...]:
    """The commands the sitting's calibration measures: SET and GET, and each
    held-out row's command (a row whose command kept the reference host's
    default cost would test that host, not the model: issue #43's HSET, -36 %
    until it was measured)."""
    rows = {WORKLOADS[e.name].command for e in chosen if e.name in WORKLOADS}
    return ("SET", "GET") + tuple(sorted(rows - {"SET", "GET"}))


def validate(out: Path, *, quick: bool = False, calibrate: bool = True,
             only: tuple[str, ...] = (), scale_only: bool = False,
             say: Callable[[str], None] = print) -> list[Row]:
    """Run the experiments (all, or the quick subset, or ``only`` those) and write
    ``out/validation.csv``, ``out/validation.md`` and ``out/<name>.png``;
    ``scale_only``: the model's defaults scaled by ``redsim calibrate
    --scale-only`` on the server, instead of a full calibration."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    every = EXPERIMENTS + HELD_OUT
    chosen = [e for e in every if (not only or e.name in only) and (not quick or e.quick)]
    unknown = sorted(set(only) - {e.name for e in every})
    if unknown:
        raise ValueError(f"unknown experiment(s) {unknown}; known: "
                         + ", ".join(e.name for e in every))
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
        if calibrate and scale_only:
            from redsim.calibrate import calibrate_scale

            cal = out / "calibration.yaml"
            say("scaling the model's defaults to this server (redsim calibrate --scale-only)")
            calibrate_scale(cal, host=server.host, port=server.port, can_write=True,
                            owned=True, progress=False, say=lambda m: say("  " + m))
        elif calibrate:
            from redsim.calibrate import calibrate as run_calibration

            cal = out / "calibration.yaml"
            say("calibrating the model on this server (redsim calibrate)")
            run_calibration(cal, host=server.host, port=server.port, can_write=True,
                            owned=True,  # its own throw-away server: no TTL, the fork runs
                            parts=("cpu", "memory") if quick else
                            ("cpu", "memory", "eviction", "disk", "fork"),
                            commands=calibrated_commands(chosen),
                            reps=CALIBRATION_REPS, say=lambda m: say("  " + m))
        lab.calibration = cal
        pooled = _calibration_repetitions(cal) if cal is not None else {}
        how = ("the defaults scaled to it (--scale-only)" if cal and scale_only
               else "calibrated on it" if cal else "defaults")
        header = (f"Redis {version} (Debian package), {how}"
                  f", {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d}")
        for exp in chosen:
            say(f"{exp.name}: {exp.title}")
            row, values = judge(lab, exp, before.get(exp.name),
                                pooled.get(exp.calibrated_as, ()), say)
            rows.append(row)
            say(f"  real {_fmt(row.real)} {exp.unit} (CV {row.real_cv:.1%}), model "
                f"{_fmt(row.model)}, {row.error:+.1%} vs ±{row.tolerance:.0%}: {row.verdict}")
            _write_tables(rows, out, header)
            if values:
                try:
                    _figure(exp, row, values, out / f"{exp.name}.png")
                except Exception as exc:  # noqa: BLE001 - a figure never costs the data
                    say(f"  (figure not drawn: {exc})")
    say(f"{summary(rows)}; {time.monotonic() - t0:.0f} s; {out}/validation.md")
    return rows


def judge(lab: Lab, exp: Experiment, before: Real | None, pooled: tuple | list,
          say: Callable[[str], None]) -> tuple[Row, list[float]]:
    """One row: measured, modelled and judged; an inconclusive one is measured
    again, all its repetitions afresh, once the host is quieter
    (``wait_for_quiet``), and the second verdict stands (noted)."""
    row, values = _attempt(lab, exp, before, pooled, host_busy_cores())
    if not row.inconclusive:
        return row, values
    say(f"  inconclusive ({row.note}); measuring it again on a quieter host")
    again, again_values = _attempt(lab, exp, None, pooled, wait_for_quiet(say))
    if again.verdict == "ERROR":
        return row, values
    first = f"first try inconclusive (±{row.tolerance:.0%} needed)"
    again.note = "; ".join(n for n in (first, again.note) if n)
    return again, again_values


def _attempt(lab: Lab, exp: Experiment, before: Real | None, pooled: tuple | list,
             busy: float) -> tuple[Row, list[float]]:
    """``run_experiment``, with a broken row reported as ERROR rather than raised,
    and the host's busy cores before it kept in the row."""
    try:
        row, values = run_experiment(lab, exp, before, pooled)
    except Exception as exc:  # noqa: BLE001 - a broken row is reported, not fatal
        traceback.print_exc()
        row, values = Row(exp.name, exp.title, exp.unit, math.nan, math.nan, 0,
                          exp.floor, math.nan, math.nan, "ERROR",
                          f"{type(exc).__name__}: {exc}", exp.cap), []
    row.host_busy = busy
    return row, values


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
