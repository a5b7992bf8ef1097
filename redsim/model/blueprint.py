"""What a run's configure steps fill before the kernel's arrays are laid out.

No Redis source: the plumbing between a validated scenario and the kernel.
``build.build_world`` creates one ``Blueprint`` and hands it to each
mechanism's ``configure(b)`` in turn (the order is the registry's,
``model/mechanisms.py``); a step reads its part of the scenario and fills its
scalars (``b.F``, ``b.I``) and its per-entity arrays (``b.fill("cn", req=...)``).
Sizes one step decides and a later one needs (connections, key rows, ...) go
in ``b.size``, a ``mechanisms.Sizes``.

The Blueprint holds the steps to what the registry says: a step writes only
the scalars its own module declares (``Scalars``) and fills only its own
module's per-entity fields (``fill``), ``shares`` excepted; it reads and sets
only the sizes its entry names; ``finish`` fails if a config scalar was written by no
step, ``fill`` and ``parts`` if a part's field was filled twice or by none.
Each message names the step, the scalar or size, and its owner.
``build_world`` then lays the arrays out (``state.flatten``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from redsim.model import state as S
from redsim.model.mechanisms import Mechanism, Sizes
from redsim.model.trace import Trace

US = 1e-6
"""Seconds per µs: scenario CPU costs are µs, the kernel's seconds."""

_DIST = {"fixed": S.DIST_FIXED, "exponential": S.DIST_EXPONENTIAL,
         "uniform": S.DIST_UNIFORM, "lognormal": S.DIST_LOGNORMAL,
         "empirical": S.DIST_EMPIRICAL}


_FIELD_OWNERS = {pre: {f.name: f.owner for f in fields} for pre, fields in S.LAYOUT.parts.items()}
"""Per part, each field's declaring module: a step fills only its own."""
_SCALARS = {where: [f for f in S.LAYOUT.fields if f.where == where] for where in ("F", "I")}
"""The declared scalars of ``F`` and of ``I``, by index."""


class Scalars:
    """``b.F`` or ``b.I`` while the steps run: the kernel's vector, indexed as
    the kernel indexes it, and who wrote each scalar.

    A write from a step whose module does not own the scalar (and whose
    registry entry does not share it) fails at once; so does a step's read of
    a config or size scalar no step has written yet (its owner's step runs
    later: the value read would be the 0 it starts at).
    """

    def __init__(self, b: Blueprint, where: str, values: np.ndarray) -> None:
        self.values = values
        self._b = b
        self._where = where
        self.writer: dict[int, str] = {}  # index -> the module whose step wrote it

    def __getitem__(self, i: int) -> Any:
        field = _SCALARS[self._where][i]
        step = self._b.step
        if (step is not None and i not in self.writer and field.kind in ("config", "size")
                and field.owner != step.module):
            raise RuntimeError(f"{step.module}'s step reads {self._where}[{field.name}] "
                               f"before {field.owner}'s step wrote it: rank it after that "
                               "step in model/mechanisms.py")
        return self.values[i]

    def __setitem__(self, i: int, value: Any) -> None:
        field = _SCALARS[self._where][i]
        step = self._b.step
        if step is not None:
            if field.owner != step.module and field.name not in step.shares:
                raise RuntimeError(
                    f"{step.module}'s step writes {self._where}[{field.name}], which "
                    f"{field.owner} owns: set it in {field.owner}'s configure, or declare "
                    f"it in {step.module}'s FIELDS if that module keeps it")
            self.writer[i] = step.module
        self.values[i] = value


class Blueprint:
    """A run being configured.

    Attributes:
        scenario: the validated scenario.
        seed: the run's root seed.
        F, I: the kernel's float and integer scalars (``state``'s indices),
            as ``Scalars``; ``vectors()`` gives the arrays.
        size: sizes decided by one step for the next (``mechanisms.Sizes``).
        step: the registry entry of the step running (None between steps).
        traces: each client group's parsed trace (``trace.Trace``), None for a
            group that replays none; the driver parses them
            (``redsim.traces.group_traces``) and ``build_world`` hands them on.
        info: what the driver gets back besides the world (windows, groups' names).
        slab_demand: the small allocations (request bytes, counts) of the keys
            the run starts with or its events add, one entry per step that
            places some (the collections', DEBUG POPULATE's, the preload's);
            ``arena.configure`` sizes the slab arrays for all of them.
        extra: objects a step hands to a later one or to ``start`` (random
            streams, preload plans).
    """

    def __init__(self, scenario: Any, seed: int,
                 traces: Sequence[Trace | None] | None = None) -> None:
        self.scenario = scenario
        self.seed = seed
        self.traces: tuple[Trace | None, ...] = (
            tuple(traces) if traces is not None else (None,) * len(scenario.clients))
        if len(self.traces) != len(scenario.clients):
            raise ValueError(f"{len(self.traces)} traces for {len(scenario.clients)} "
                             "client groups: one per group, None where it replays none")
        self.slab_demand: list[tuple[np.ndarray, np.ndarray]] = []
        F, I = S.new_scalars()
        self.F, self.I = Scalars(self, "F", F), Scalars(self, "I", I)
        self.size = Sizes()
        self.step: Mechanism | None = None
        self.info: dict[str, Any] = {}
        self.extra: dict[str, Any] = {}
        self._parts: dict[str, dict[str, np.ndarray]] = {pre: {} for pre, _ in S._PARTS}
        self._emp_p: list[float] = []
        self._mix: list[tuple[float, int, float, float, float, float]] = []
        self._emp_x: list[float] = []

    def trace(self, g: int) -> Trace:
        """The parsed trace client group ``g`` replays (``traces``)."""
        tr = self.traces[g]
        if tr is None:
            raise ValueError(f"client group {self.scenario.clients[g].name!r} replays a "
                             "trace, but build_world was given none for it (the driver "
                             "parses them: redsim.traces.group_traces)")
        return tr

    @contextmanager
    def running(self, mechanism: Mechanism) -> Iterator[None]:
        """Hold the step (``configure`` or ``start``) run inside to
        ``mechanism``'s registry entry; after its ``configure``, every size
        the entry provides must be set."""
        self.step = mechanism
        self.size.during(mechanism)
        try:
            yield
        finally:
            self.step = None
            self.size.during(None)
        unset = [n for n in mechanism.provides if not self.size.is_set(n)]
        if unset:
            raise RuntimeError(f"{mechanism.module}.configure did not set size(s) {unset}, "
                               "which its registry entry provides")

    def finish(self) -> None:
        """After the steps (``start`` too): every config scalar was written by
        some step (a config scalar left at 0 by accident would run silently)."""
        unset = [f"{where}[{f.name}] ({f.owner})" for where in ("F", "I")
                 for i, f in enumerate(_SCALARS[where])
                 if f.kind == "config" and i not in getattr(self, where).writer]
        if unset:
            raise RuntimeError(f"no configure step wrote the config scalar(s) "
                               f"{', '.join(unset)}: its owner's configure must set it, "
                               "even to 0")

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``F`` and ``I`` arrays."""
        return self.F.values, self.I.values

    def part(self, pre: str) -> dict[str, np.ndarray]:
        """The fields of part ``pre`` (``"cn"``, ``"gp"``, ``"tb"``, ...) filled so far."""
        return self._parts[pre]

    def fill(self, pre: str, **fields: np.ndarray) -> None:
        """Fill fields of part ``pre``; a field filled twice, or one another
        module declares (and the running step's entry does not share), is a
        wiring error."""
        part = self._parts[pre]
        step = self.step
        if step is not None:
            owners = _FIELD_OWNERS[pre]
            foreign = sorted(f"{pre}_{n} ({owners[n]})" for n in fields
                             if n in owners and owners[n] != step.module
                             and f"{pre}_{n}" not in step.shares)
            if foreign:
                raise RuntimeError(
                    f"{step.module}'s configure fills {', '.join(foreign)}, which "
                    "another module declares: fill it in its owner's configure, or "
                    "declare the sharing in the registry (mechanisms.Mechanism.shares)")
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
