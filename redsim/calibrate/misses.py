"""The memory hierarchy's miss costs, fitted to the dataset sweep.

No Redis source: a fit of ``model/cpu_caches.py``'s penalties to
``dataset.measure``'s main-thread CPU per request. Each point (a dataset of
``keys`` keys of ``value_size`` bytes, a command, a pipeline depth) is

    µs per request = base(command, pipeline, value size)
                     + Σ_level penalty_level × loads × p_level(dataset),

with ``p_level`` the probability a dependent load misses the level, from the
host's cache sizes (``host.l2``, ``host.llc``, ``host.tlb-reach``) and Che's
approximation for uniform access, and ``loads`` the key lookup's dependent
loads (``cpu_caches.touch``). The penalties and bases are a non-negative
least-squares fit (Lawson and Hanson's active set, ``solver.nnls``): each
level's share of the rise with the dataset's size.

A fit that can only explain the points with a base at zero (the misses
would be the whole cost of a request) or with every penalty at zero (the
CPU does not rise with the dataset: the sweep was too small for this host's
caches, or too noisy) is refused with the figures (``MissFitError``); a
single level at zero is an answer (where two levels' steps fall at about the
same size, the fit may give one the other's share).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from redsim.calibrate.replay import KEY_SIZE
from redsim.calibrate.solver import nnls
from redsim.model import cpu_caches as cc

LEVELS = ("l2", "tlb", "llc", "page-walk")
"""The penalties fitted, as ``engine.cpu.miss`` names them."""

COVERED = 0.5
"""A level is fitted only if some point of the sweep misses it with at least
this probability: a sweep that stays inside the LLC says nothing of its cost."""


SYS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


def cache_sizes(root: Path = SYS_CACHE) -> dict[str, int]:
    """``{"l2": bytes, "llc": bytes}`` of this machine's CPU 0, from sysfs (the
    last-level cache is the highest unified level); missing ones are left out."""
    found: dict[int, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind not in ("Unified", "Data"):
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:].upper(), 1)
        digits = size[:-1] if size[-1:].isalpha() else size
        try:
            found[level] = int(digits) * mult
        except ValueError:
            continue
    out: dict[str, int] = {}
    if 2 in found:
        out["l2"] = found[2]
    if found and max(found) >= 3:
        out["llc"] = found[max(found)]
    return out


class MissFitError(RuntimeError):
    """The sweep cannot be explained with every base and some penalty above zero."""


@dataclass(frozen=True)
class MissFit:
    """The fitted penalties, µs per dependent load, and how well they explain the points.

    Attributes:
        penalty: per level of ``LEVELS`` the sweep covers.
        uncovered: the levels whose step the sweep's datasets did not reach
            (no point misses them with probability ``COVERED`` or more): not
            fitted, they keep their defaults.
        base: µs per request by (command, pipeline, value size).
        worst, rms: the largest and the root-mean-square relative error over the points.
        points: how many (medians) were fitted.
    """

    penalty: dict[str, float]
    base: dict[tuple[str, int, int], float]
    worst: float
    rms: float
    points: int
    uncovered: tuple[str, ...] = ()


def _touch(keys: int, value_size: int) -> cc.Touch:
    """A sweep point's dataset: ``keys`` uniform keys of ``value_size`` bytes,
    named as the calibration names them, no TTLs."""
    return cc.touch(cc.KeyAccess(0, keys, 1.0), value_size, KEY_SIZE, False)


def design(points: dict[tuple[int, int, str, int], float], l2: float, llc: float,
           tlb_reach: float) -> tuple[np.ndarray, np.ndarray, list[tuple[str, int, int]]]:
    """The least-squares system: one row per point (``dataset.medians``' keys:
    keys, value size, command, pipeline), a base column per (command, pipeline,
    value size), then ``loads × p_level`` per level of ``LEVELS`` (the largest
    miss probability of a level is that column's maximum over ``loads``)."""
    bases = sorted({(cmd, pipe, v) for (_, v, cmd, pipe) in points})
    h = cc.Hierarchy(l2, llc, tlb_reach, {name: 1.0 for name in LEVELS})
    rows, y = [], []
    for (keys, v, cmd, pipe), us in sorted(points.items()):
        t = _touch(keys, v)
        p = cc.level_misses([t], h)
        row = [1.0 if b == (cmd, pipe, v) else 0.0 for b in bases]
        row += [t.loads * p[name][0][0] for name in LEVELS]
        rows.append(row)
        y.append(us)
    return np.array(rows), np.array(y), bases


def fit(points: dict[tuple[int, int, str, int], float], l2: float, llc: float,
        tlb_reach: float) -> MissFit:
    """The penalties and bases that best explain ``points`` (µs per request),
    in relative terms (each row weighted by 1/µs: a pipeline-1 request's 6 µs
    and a pipeline-16 one's 1 µs count alike)."""
    a, y, bases = design(points, l2, llc, tlb_reach)
    nb = len(bases)
    loads = np.array([_touch(k, v).loads for (k, v, _, _) in sorted(points)], dtype=float)
    reach = (a[:, nb:] / loads[:, None]).max(axis=0)
    covered = [i for i in range(len(LEVELS)) if reach[i] >= COVERED]
    cols = list(range(nb)) + [nb + i for i in covered]
    w = 1.0 / y
    x = np.zeros(a.shape[1])
    x[cols] = nnls(a[:, cols] * w[:, None], y * w)
    pred = a @ x
    err = pred / y - 1.0
    result = MissFit({LEVELS[i]: float(x[nb + i]) for i in covered},
                     {b: float(x[i]) for i, b in enumerate(bases)},
                     float(np.max(np.abs(err))), float(math.sqrt(np.mean(err ** 2))), len(y),
                     tuple(LEVELS[i] for i in range(len(LEVELS)) if i not in covered))
    zero_base = [b for b, v in result.base.items() if v <= 1e-9]
    if zero_base:
        raise MissFitError(
            "the dataset sweep is explained only with no cost for a request outside its "
            "misses (" + ", ".join(f"{c} P={p} {v} B" for c, p, v in zero_base) + "): "
            + _table(points, pred))
    if not result.penalty:
        raise MissFitError("the sweep's largest dataset fits every level of the host's "
                           "caches: nothing to fit (a larger --max-dataset reaches them)")
    if all(v <= 1e-9 for v in result.penalty.values()):
        raise MissFitError("the CPU per request does not rise with the dataset's size "
                           "over this sweep (every miss cost fits at 0): "
                           + _table(points, pred))
    return result


def _table(points: dict[tuple[int, int, str, int], float], pred: np.ndarray) -> str:
    """The points against the fit, for an error message."""
    return "; ".join(f"{k:,} keys {v} B {cmd} P={pipe}: {us:.2f} µs, fit {p:.2f}"
                     for ((k, v, cmd, pipe), us), p in zip(sorted(points.items()), pred,
                                                            strict=True))


__all__ = ["LEVELS", "MissFit", "MissFitError", "cache_sizes", "design", "fit"]
