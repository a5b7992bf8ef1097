"""What a run's configure steps fill before the kernel's arrays are laid out.

No Redis source: the plumbing between a validated scenario and the kernel.
``build.build_world`` creates one ``Blueprint`` and hands it to each
mechanism's ``configure(b)`` in turn (the order is in ``build.STEPS``); a step
reads its part of the scenario and fills its scalars (``b.F``, ``b.I``) and
its per-entity arrays (``b.part("cn")["req"] = ...``). Sizes one step decides
and a later one needs (connections, key rows, ...) go in ``b.size``.
``build_world`` then checks that every field of every part was filled exactly
once and lays the arrays out (``state.flatten``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from redsim.model import state as S

US = 1e-6
"""Seconds per µs: scenario CPU costs are µs, the kernel's seconds."""

_DIST = {"fixed": S.DIST_FIXED, "exponential": S.DIST_EXPONENTIAL,
         "uniform": S.DIST_UNIFORM, "lognormal": S.DIST_LOGNORMAL,
         "empirical": S.DIST_EMPIRICAL}


class Blueprint:
    """A run being configured.

    Attributes:
        scenario: the validated scenario.
        seed: the run's root seed.
        F, I: the kernel's float and integer scalars (``state``'s indices).
        size: sizes decided by one step for the next (``"conns"``, ``"key_rows"``, ...).
        info: what the driver gets back besides the world (windows, groups' names).
        extra: objects a step hands to a later one or to ``start`` (random
            streams, preload plans).
    """

    def __init__(self, scenario: Any, seed: int) -> None:
        self.scenario = scenario
        self.seed = seed
        self.F, self.I = S.new_scalars()
        self.size: dict[str, int] = {}
        self.info: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        self._parts: dict[str, dict[str, np.ndarray]] = {pre: {} for pre, _ in S._PARTS}
        self._emp_p: list[float] = []
        self._mix: list[tuple[float, int, float, float, float, float]] = []
        self._emp_x: list[float] = []

    def part(self, pre: str) -> dict[str, np.ndarray]:
        """The fields of part ``pre`` (``"cn"``, ``"gp"``, ``"tb"``, ...) filled so far."""
        return self._parts[pre]

    def fill(self, pre: str, **fields: np.ndarray) -> None:
        """Fill fields of part ``pre``; a field filled twice is a wiring error."""
        part = self._parts[pre]
        twice = sorted(set(part) & set(fields))
        if twice:
            raise RuntimeError(f"part {pre!r}: field(s) {twice} filled twice")
        part.update(fields)

    def dist(self, d: Any) -> tuple[int, float, float, float, float]:
        """The kernel's (kind, mean, low, high, sigma) for a scenario distribution;
        an empirical one's table is appended to ``tb_emp_p``/``tb_emp_x`` and its
        first and last point's index given as low and high."""
        if d.kind == "mixture":
            comps = [(w, *self.dist(part)) for w, part in zip(d.weights, d.parts, strict=True)]
            first = len(self._mix)
            acc = 0.0
            for i, (w, kind, mean, low, high, sigma) in enumerate(comps):
                acc = 1.0 if i == len(comps) - 1 else acc + w
                self._mix.append((acc, kind, mean, low, high, sigma))
            return S.DIST_MIXTURE, float(d.mean), float(first), float(len(self._mix) - 1), 0.0
        if d.kind != "empirical":
            return _DIST[d.kind], float(d.mean), float(d.low), float(d.high), float(d.sigma)
        assert 2 <= len(d.table_p) == len(d.table_x) <= S.EMP_MAX_POINTS
        first = len(self._emp_p)
        self._emp_p.extend(d.table_p)
        self._emp_x.extend(d.table_x)
        return S.DIST_EMPIRICAL, float(d.mean), float(first), float(len(self._emp_p) - 1), 0.0

    def empirical_tables(self) -> dict[str, np.ndarray]:
        """Every empirical distribution's table and every mixture's components, as
        ``Tables`` fields."""
        out = ({"emp_p": np.zeros(1), "emp_x": np.zeros(1)} if not self._emp_p else
               {"emp_p": np.asarray(self._emp_p, np.float64),
                "emp_x": np.asarray(self._emp_x, np.float64)})
        rows = self._mix or [(1.0, S.DIST_FIXED, 0.0, 0.0, 0.0, 0.0)]
        for j, name in enumerate(("cum", "kind", "mean", "low", "high", "sigma")):
            col = [r[j] for r in rows]
            out[f"dmix_{name}"] = np.asarray(col, np.int64 if name == "kind" else np.float64)
        return out

    def parts(self) -> dict[str, Any]:
        """Each part as its namedtuple; every field must have been filled."""
        out = {}
        for pre, nt in S._PARTS:
            got = self._parts[pre]
            missing = [f for f in nt._fields if f not in got]
            unknown = sorted(set(got) - set(nt._fields))
            if missing or unknown:
                raise RuntimeError(f"part {pre!r} ({nt.__name__}): no step filled {missing}"
                                   + (f"; unknown fields {unknown}" if unknown else ""))
            out[pre] = nt(**got)
        return out


def i64(x: Any) -> np.ndarray:
    return np.asarray(x, np.int64)


def f64(x: Any) -> np.ndarray:
    return np.asarray(x, np.float64)
