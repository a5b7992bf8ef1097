"""What a run reports, declared by the mechanism that makes it.

No Redis source: how the summary's keys, the time series' columns and the
printed summary's lines are declared.

Each mechanism declares, in a ``RESULTS`` block next to its ``FIELDS``, the
summary keys it makes (``Metric``): the key's name, its unit, how a host
combines it over its instances (``Combine``), one line of doc, how the run's
value is read (``value``: a small function of the finished run, ``Run``;
``None`` where a named function of ``redsim/result.py`` makes it with others,
said in ``made_by``) and, on the key that carries it, the line the ``redsim
run`` summary prints (``Line``). ``redsim/result.py`` collects the blocks
(``declared``) and ``Result.from_world``, ``host/result.aggregate_summary``
and ``cli.summary_table`` read them, so a new summary figure is one entry in
one file.

Why Python objects in the kernel modules, not literal data read from their
source as ``state`` reads ``FIELDS``: a value, a line's text and a
condition are small functions, which literal data cannot hold. Reading the
blocks imports the kernel modules, which imports numba but compiles nothing
(``jit.KernelDispatcher`` compiles on the first call); ``redsim/result.py``
imports numba already (``model.histogram``), and the blocks are collected
only when a result is built or printed, when the kernel has been imported
anyway (``cli.summary_table`` on a stored summary imports them too, about a
second). This module imports nothing of the model but ``state`` (the
recorder's floor, ``tests/test_layers.py``), so a kernel module can import it.
The blocks are code in the kernel's sources: changing a declaration changes
``kernel_cache_dir``'s hash (one recompile) and ``result.model_version``, as
any code change there does.

The time series' columns are declared the same way (``Column``: the
column's name, unit, doc and how it is made from the recorded ``wf``/``wi``
series); the ``cpu_*`` columns and ``cpu_idle`` (and the ``cpu_*_share``
keys) follow from the ``cpu`` series themselves, generated in ``result.py``'s
block from ``result.CPU_COLUMNS``, and each client group's columns and
``<group>.<metric>`` keys are made by ``result._group_tables`` (the keys are
declared by the run's key of the same name, ``result.GROUP_METRICS``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redsim.model import state as S

# ---- How a host combines a key over its instances ------------------------------


@dataclass(frozen=True)
class Combine:
    """How ``host/result.aggregate_summary`` makes the host's value of a key from
    its instances' values (``rule``; ``of`` names what the rule needs):

    - ``sum``: added up (the first instance's type: ints stay ints);
    - ``max`` / ``mean``: the instances' largest / mean;
    - ``first``: the first instance's (the run's identity; lists and texts);
    - ``any``: true if any instance's is;
    - ``weighted``: the mean weighted by the key ``of`` (a client group's
      key is weighted by that group's ``of``);
    - ``histogram``: a latency percentile of the instances' merged histogram;
    - ``causes``: ``cause=count;...`` texts added up by cause;
    - ``series_peak``: the peak of the instances' summed column ``of``;
    - ``ratio``: the host's key ``of[0]`` over its key ``of[1]`` (0 when that is 0);
    - ``host``: the host's own figure, made by ``HostResult.build`` (not an
      instance's).

    ``sum``, ``max``, ``mean``, ``series_peak`` and ``ratio`` leave a value that
    is not a number (a list, a text, None) as the first instance's, and give
    None if any instance's is None.
    """

    rule: str
    of: str | tuple[str, str] = ""

    def __str__(self) -> str:
        return self.rule + (f"({self.of})" if self.of else "")


RULES = ("sum", "max", "mean", "first", "any", "weighted", "histogram", "causes",
         "series_peak", "ratio", "host")
SUM, MAX, MEAN, FIRST, ANY = (Combine(r) for r in ("sum", "max", "mean", "first", "any"))
HISTOGRAM, CAUSES, HOST = Combine("histogram"), Combine("causes"), Combine("host")


def weighted(by: str) -> Combine:
    """The instances' mean weighted by the summary key ``by`` (requests, ...)."""
    return Combine("weighted", by)


def series_peak(column: str) -> Combine:
    """The peak of the instances' summed time-series ``column``."""
    return Combine("series_peak", column)


def ratio(num: str, den: str) -> Combine:
    """The host's ``num`` over its ``den``, both already combined."""
    return Combine("ratio", (num, den))


# ---- The printed summary ---------------------------------------------------------


def fmt_s(v: float | None) -> str:
    """A duration as the summary prints it: s, ms or µs; ``-`` for none."""
    if v is None or v != v:
        return "-"
    if v >= 1.0:
        return f"{v:.3f} s"
    if v >= 1e-3:
        return f"{v * 1e3:.3f} ms"
    return f"{v * 1e6:.1f} µs"


def mb(v: float) -> str:
    """Bytes as MB (2^20) with one decimal."""
    return f"{v / 2**20:,.1f}"


def shares(s: dict, *activities: str) -> str:
    """Main-thread shares ``cpu_<activity>_share`` joined by `` / ``."""
    return " / ".join(f"{s[f'cpu_{k}_share']:.1%}" for k in activities)


@dataclass(frozen=True)
class Line:
    """One line of ``redsim run``'s printed summary: ``label``, then ``text(summary)``;
    printed when ``when(summary)`` holds (always without one). Lines print in the
    order of ``at`` (a free number: the table's order, mechanisms interleaved)."""

    at: float
    label: str
    text: Callable[[dict], str]
    when: Callable[[dict], bool] | None = None


# ---- A summary key --------------------------------------------------------------


@dataclass
class Run:
    """A finished run as a ``Metric.value`` reads it: the world ``w``, the time
    series ``ts`` built so far, its ``n`` windows of ``length`` s, the
    post-warm-up windows ``post`` (``span`` s), ``recorded`` (``rc_wf`` and
    ``rc_wi``, ``n`` columns each) and the ``summary`` made so far."""

    w: Any
    ts: Any  # pandas.DataFrame
    n: int
    length: Any  # numpy arrays
    post: Any
    span: float
    wf: Any
    wi: Any
    scenario: Any
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    """One summary key: ``name``, ``unit`` (``s``, ``B``, ``1/s``, ``-`` for a
    count or a text, ...), ``combine`` (a ``Combine``), ``doc``; ``value(run)``
    gives the run's value (``None``: made by ``made_by``, the function that
    makes it with other keys: in ``redsim/result.py``, ``HostResult.build`` for
    the host's, or a path under ``redsim``); ``line``, the printed line this
    key carries."""

    name: str
    unit: str
    combine: Combine
    doc: str
    value: Callable[[Run], Any] | None = None
    made_by: str = ""
    line: Line | None = None


def counter(name: str) -> Callable[[Run], int]:
    """The integer scalar ``name`` (``STAT_EVICTED``, ...) at the end of the run."""
    index = S.LAYOUT.index[name]
    return lambda r: int(r.w.I[index])


def end(column: str, kind: type = int) -> Callable[[Run], Any]:
    """The time series ``column``'s last value (0 for a run without windows)."""
    return lambda r: kind(r.ts[column].iloc[-1]) if r.n else kind(0)


def peak(column: str) -> Callable[[Run], int]:
    """The time series ``column``'s largest value, an integer (0 without windows)."""
    return lambda r: int(r.ts[column].max()) if r.n else 0


def time_mean(series: str) -> Callable[[Run], float]:
    """A ``time`` series' (``W_*``) mean over the post-warm-up windows."""
    index = S.LAYOUT.index[series]
    return lambda r: float(r.wf[index][r.post].sum() / r.span)


def per_sec(series: str) -> Callable[[Run], float]:
    """A ``count`` series' (``WI_*``) rate over the post-warm-up windows, 1/s."""
    index = S.LAYOUT.index[series]
    return lambda r: float(r.wi[index][r.post].sum() / r.span)


def scalar(name: str) -> Callable[[Run], float]:
    """The float scalar ``name`` (``LATEST_FORK``, ...) at the end of the run."""
    index = S.LAYOUT.index[name]
    return lambda r: float(r.w.F[index])


def larger(*values: Callable[[Run], Any]) -> Callable[[Run], Any]:
    """The largest of several values (a peak kept by the kernel and a sampled one)."""
    return lambda r: max(v(r) for v in values)


# ---- A time-series column ---------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One column of a run's time series (one value per sample window):
    ``name``, ``unit``, ``doc`` and ``value(run)``, an array of ``run.n`` values
    made from the recorded series (``rate``, ``total``, ``gauge``, ``level``,
    ``recorded``, or a small function of them). Columns are placed in the order
    of ``at`` (a free number, as a ``Line``'s); a value may read the columns
    placed before it in ``run.ts``."""

    at: float
    name: str
    unit: str
    doc: str
    value: Callable[[Run], Any]


def row(r: Run, series: str) -> Any:
    """The recorded series ``series`` (``W_*`` in ``rc_wf``, ``WI_*`` in ``rc_wi``)
    over the run's windows."""
    index = S.LAYOUT.index[series]
    return r.wi[index] if series.startswith("WI_") else r.wf[index]


def rate(series: str) -> Callable[[Run], Any]:
    """A ``count`` series per second of each window (events/s)."""
    return lambda r: row(r, series) / r.length


def total(series: str) -> Callable[[Run], Any]:
    """A ``count`` series added up from the start: INFO's counter at each window's end."""
    return lambda r: np.cumsum(row(r, series))


def gauge(series: str) -> Callable[[Run], Any]:
    """A series as recorded (a ``gauge`` at each window's end, a ``stat``, or a
    ``count`` per window)."""
    return lambda r: row(r, series)


def level(series: str) -> Callable[[Run], Any]:
    """A ``time`` series over its window's length: the level's time mean."""
    return lambda r: row(r, series) / r.length


def per_request(series: str) -> Callable[[Run], Any]:
    """A ``time`` or ``stat`` sum over the window's completed requests (``WI_DONE``):
    the window's mean per request, NaN in a window that completed none."""
    def value(r: Run) -> Any:
        done = row(r, "WI_DONE")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(done > 0, row(r, series) / done, np.nan)
    return value


def when_done(series: str) -> Callable[[Run], Any]:
    """A per-request figure (the window's largest latency), NaN in a window that
    completed no request."""
    return lambda r: np.where(row(r, "WI_DONE") > 0, row(r, series), np.nan)


def info_ratio(num: str, den: str) -> Callable[[Run], Any]:
    """One gauge over another, rounded to 2 decimals as INFO prints its ratios."""
    def value(r: Run) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.round(row(r, num) / row(r, den), 2)
    return value


Array = Any
"""A numpy array with one value per sample window (a ``Column``'s value)."""
