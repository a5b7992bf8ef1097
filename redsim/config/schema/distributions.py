"""Distributions of durations (s), sizes (bytes), counts and dimensionless
multipliers, as every section that draws a value writes them: a plain value
(fixed), ``{distribution: exponential | uniform | lognormal, ...}``, an
empirical table (``samples: FILE``, ``values: [...]``, ``quantiles: {p: v}``)
or a ``mixture`` of those (``_Dist`` and its subclasses ``DurationDist``,
``ScaleDist``, ``SizeDist``, ``CountDist``); with the samples file reader and
the inverse-CDF table the kernel draws from (``samples_table``).
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from functools import partial
from itertools import pairwise
from typing import Any, ClassVar

from pydantic import ConfigDict, model_serializer, model_validator

from redsim.config.errors import BadValue, did_you_mean, show, show_path
from redsim.config.schema.types import (
    MAX_SIGMA,
    MAX_VALUE_SIZE,
    DistKind,
    _choice,
    _Model,
)
from redsim.config.units import (
    MAX_DURATION_S,
    parse_duration,
    parse_float,
    parse_int,
    parse_size,
)
from redsim.fileio import IRREGULAR, TOO_LARGE, UNREADABLE, RefusedFile, open_regular
from redsim.model.state import EMP_MAX_POINTS


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


_DIST_KEYS: dict[str, tuple[str, ...]] = {
    "fixed": ("value", "mean"),
    "exponential": ("mean",),
    "uniform": ("min", "max"),
    "lognormal": ("mean", "sigma"),
    "empirical": ("samples", "values", "quantiles"),
    "mixture": ("components",),
}

MAX_COMPONENTS = 16
"""Most components a mixture distribution may have."""

MAX_SAMPLES = 10_000_000
"""Most values a samples file or ``values`` list may hold."""
MAX_SAMPLE_FILE = 256 * 1024 * 1024
"""Largest samples file read, bytes."""
EMP_TAIL_POINTS = 100
"""Of a thinned table's ``EMP_MAX_POINTS``, the ones refining its top end."""


def _sample_file(path: Any, parse: Callable[[Any], float], unit: str) -> list[float]:
    """The values of a samples file: one column, one value per line, plain numbers in
    the field's unit (s or bytes) or with a unit (``1.2ms``, ``4kb``). A first line
    that is not a value is a header; blank lines and ``#`` comments are skipped."""
    if not isinstance(path, str) or not path.strip():
        raise BadValue("the path of a samples file (one value per line)", show(path),
                       field=("samples",))
    expected = (f"one value ≥ 0 per line of {path} (in {unit}, or with a unit like "
                f"{'1.2ms' if unit == 's' else '4kb'})")
    values: list[float] = []
    first = True
    try:
        with open_regular(path, MAX_SAMPLE_FILE) as raw, \
                io.TextIOWrapper(raw, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                text = line.split("#", 1)[0].strip()
                if not text:
                    continue
                try:
                    x = float(text)
                except ValueError:
                    try:
                        x = float(parse(text))
                    except BadValue:
                        if first:
                            first = False
                            continue  # a header line
                        raise BadValue(expected, f"{show(text)} on line {n}",
                                       field=("samples",)) from None
                first = False
                if not math.isfinite(x) or x < 0:
                    raise BadValue(expected, f"{show(text)} on line {n}", field=("samples",))
                values.append(x)
                if len(values) > MAX_SAMPLES:
                    raise BadValue(f"at most {MAX_SAMPLES:,} samples in {path}",
                                   f"more (line {n})", field=("samples",))
    except RefusedFile as exc:  # a FIFO or a device is refused before it is opened
        expected, why = {
            UNREADABLE: ("a readable samples file", exc.found),
            IRREGULAR: ("a regular file of samples", f"{exc.found}: not a regular file"),
            TOO_LARGE: (f"a samples file of at most {MAX_SAMPLE_FILE >> 20} MB", exc.found),
        }[exc.reason]
        raise BadValue(expected, f"{show_path(path)} ({why})", field=("samples",)) from None
    except UnicodeDecodeError:
        raise BadValue(f"a text file of samples (UTF-8) in {path}", "binary data",
                       field=("samples",)) from None
    except OSError as exc:  # the read itself failed (EIO): stat and open succeeded
        raise BadValue("a readable samples file", f"{show_path(path)} "
                       f"({exc.strerror or type(exc).__name__})", field=("samples",)) from None
    if not values:
        raise BadValue(f"at least one sample in {path}", "none", field=("samples",))
    return values


def samples_table(values: list[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The inverse-CDF table (probabilities, values) of samples: the sorted samples
    ``x(0) ≤ … ≤ x(n-1)`` at probabilities ``r/(n-1)`` (numpy's default quantiles,
    so the table is exact between order statistics). Above ``EMP_MAX_POINTS``
    samples the table keeps the ranks of an even grid of ``EMP_MAX_POINTS -
    EMP_TAIL_POINTS`` points (rank 0, the minimum, and n-1, the maximum, among them)
    plus ``EMP_TAIL_POINTS`` ranks spaced geometrically below the maximum (1, 2, 3,
    5, … below it, down to ten grid steps): the highest samples keep their own
    probabilities, so a rare outlier weighs 1/n, not a whole grid step."""
    import numpy as np

    x = np.sort(np.asarray(values, np.float64))
    n = len(x)
    if n == 1:
        return (0.0, 1.0), (float(x[0]), float(x[0]))
    if n <= EMP_MAX_POINTS:
        ranks = np.arange(n)
    else:
        even = EMP_MAX_POINTS - EMP_TAIL_POINTS
        top = min(n - 1.0, 10 * (n - 1) / (even - 1))
        ranks = np.unique(np.concatenate([
            np.rint(np.linspace(0, n - 1, even)),
            n - 1 - np.rint(np.geomspace(1, top, EMP_TAIL_POINTS)),
        ]).astype(np.int64))
    return (tuple(float(r) / (n - 1) for r in ranks.tolist()),
            tuple(float(v) for v in x[ranks].tolist()))


def table_mean(ps: tuple[float, ...], xs: tuple[float, ...]) -> float:
    """The mean of the distribution an inverse-CDF table defines (linear between its
    points): the sum of each segment's probability times its midpoint."""
    return math.fsum((p1 - p0) * (x0 + x1) / 2
                     for (p0, x0), (p1, x1) in pairwise(zip(ps, xs, strict=True)))


class _Dist(_Model):
    """A distribution, normalised. YAML gives a scalar (fixed) or a mapping
    {distribution, value | mean | min, max | sigma | samples | values | quantiles}.

    An empirical distribution is an inverse-CDF table: probabilities from 0 to 1
    and the values at them, linear in between (at most 1,001 points).
    ``samples: FILE`` (one value per line) and ``values: [...]`` give the
    samples' own quantiles; past 1,001 samples the table keeps 901 evenly
    spaced ranks and 100 more near the maximum, so a rare outlier keeps its
    weight of one sample. ``quantiles: {0.5: 2ms, 1.0: 80ms}`` gives the points
    themselves (a 1.0 quantile is required; without a 0.0 one, the lowest value
    given holds down to probability 0). A resolved scenario writes the table as
    ``quantiles``, so it loads back equal without the file.

    Attributes:
        kind: fixed, exponential, uniform, lognormal or empirical.
        mean: arithmetic mean (for fixed, the value; for empirical, the table's).
        low, high: support bounds (fixed: value, value; uniform: min, max;
            exponential/lognormal: 0, inf; empirical: the table's first and last value).
        sigma: lognormal shape (standard deviation of the log); 0 otherwise.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    _parse: ClassVar[Callable[[Any], float]]
    _unit: ClassVar[str]
    _max: ClassVar[float]
    """Largest value the distribution may name (mean, bounds, table values)."""
    _max_text: ClassVar[str]

    kind: DistKind
    mean: float
    low: float
    high: float
    sigma: float = 0.0
    weights: tuple[float, ...] = ()
    """Mixture only: each component's probability, summing to 1."""
    parts: tuple[Any, ...] = ()
    """Mixture only: the components, distributions of the same class (not mixtures)."""
    table_p: tuple[float, ...] = ()
    """Empirical only: the table's probabilities, 0 first, 1 last, increasing."""
    table_x: tuple[float, ...] = ()
    """Empirical only: the values at ``table_p``, not decreasing."""

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        if isinstance(data, _Dist):
            return data
        if isinstance(data, dict) and {"kind", "mean", "low", "high"} <= set(data):
            return data  # already normalised (built in code)
        if not isinstance(data, dict):
            value = float(cls._parse(data))
            return {"kind": "fixed", "mean": value, "low": value, "high": value}
        return cls._from_mapping(data)

    @classmethod
    def _from_mapping(cls, data: dict[Any, Any]) -> dict[str, Any]:
        try:
            kind = _choice(tuple(_DIST_KEYS))(data.get("distribution", "fixed"))
        except BadValue as exc:
            raise BadValue(
                exc.expected, exc.found, field=("distribution",), hint=exc.hint
            ) from None
        allowed = ("distribution", *_DIST_KEYS[kind])
        for key in data:
            if key not in allowed:
                raise BadValue(
                    f"keys of {_a(kind)} distribution ({', '.join(allowed)})",
                    show(key),
                    field=(str(key),),
                    hint=did_you_mean(str(key), allowed),
                )
        if kind == "empirical":
            return cls._empirical(data)
        if kind == "mixture":
            return cls._mixture(data)
        values: dict[str, float] = {}
        for key in _DIST_KEYS[kind]:
            if key in data:
                parse = partial(parse_float, minimum=0) if key == "sigma" else cls._parse
                try:
                    values[key] = float(parse(data[key]))
                except BadValue as exc:
                    raise BadValue(exc.expected, exc.found, field=(key,)) from None
        return cls._build(kind, values)

    @classmethod
    def _empirical(cls, data: dict[Any, Any]) -> dict[str, Any]:
        """``samples: FILE`` | ``values: [...]`` | ``quantiles: {p: v}``."""
        given = [k for k in _DIST_KEYS["empirical"] if k in data]
        if len(given) != 1:
            raise BadValue("one of samples (a file), values (a list) or quantiles "
                           "(probability: value) for an empirical distribution",
                           "none" if not given else " and ".join(given),
                           field=(given[1] if len(given) > 1 else "samples",))
        key = given[0]
        raw = data[key]

        def value(v: Any, where: tuple[Any, ...]) -> float:
            # A bare number is in the base unit as it is: a table's interpolated
            # sizes keep their fractions, so a resolved scenario loads back equal.
            try:
                x = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
                    else float(cls._parse(v))
            except BadValue as exc:
                raise BadValue(exc.expected, exc.found, field=where) from None
            if not math.isfinite(x) or x < 0:
                raise BadValue(f"a finite value ≥ 0 ({cls._unit})", show(v), field=where)
            return x

        if key == "samples":
            ps, xs = samples_table(_sample_file(raw, cls._parse, cls._unit))
        elif key == "values":
            if not isinstance(raw, (list, tuple)) or not raw:
                raise BadValue("a non-empty list of values", show(raw), field=(key,))
            if len(raw) > MAX_SAMPLES:
                raise BadValue(f"at most {MAX_SAMPLES:,} values", f"{len(raw):,}", field=(key,))
            ps, xs = samples_table([value(v, (key, i)) for i, v in enumerate(raw)])
        else:
            ps, xs = cls._quantiles(raw, value)
        return {"kind": "empirical", "mean": table_mean(ps, xs), "low": xs[0],
                "high": xs[-1], "table_p": ps, "table_x": xs}

    @classmethod
    def _mixture(cls, data: dict[Any, Any]) -> dict[str, Any]:
        """``components: [{weight: 0.99, distribution: lognormal, ...}, ...]``: each
        draw picks a component with its weight's probability (weights are
        normalised to sum to 1), then draws from it."""
        raw = data.get("components")
        if not isinstance(raw, list) or not 2 <= len(raw) <= MAX_COMPONENTS:
            raise BadValue(f"a list of 2 to {MAX_COMPONENTS} components, each a distribution "
                           "with a weight", show(raw), field=("components",))
        weights, parts = [], []
        for i, comp in enumerate(raw):
            where = ("components", i)
            if not isinstance(comp, dict) or "weight" not in comp:
                raise BadValue("a distribution with a weight, like {weight: 0.01, "
                               "distribution: fixed, value: 50ms}", show(comp), field=where)
            try:
                weight = parse_float(comp["weight"], minimum=0, exclusive_min=True)
            except BadValue as exc:
                raise BadValue(exc.expected, exc.found, field=(*where, "weight")) from None
            rest = {k: v for k, v in comp.items() if k != "weight"}
            if rest.get("distribution") == "mixture":
                raise BadValue("a component that is not itself a mixture", "mixture",
                               field=(*where, "distribution"))
            try:
                part = cls.model_validate(cls._from_mapping(rest))
            except BadValue as exc:
                raise BadValue(exc.expected, exc.found, field=(*where, *exc.field),
                               hint=exc.hint) from None
            weights.append(weight)
            parts.append(part)
        # Scaled by the largest first: the sum of weights near the float's
        # largest value would overflow, and the proportions are all that count.
        top = max(weights)
        total = math.fsum(x / top for x in weights)
        weights = [x / top / total for x in weights]
        return {"kind": "mixture", "mean": math.fsum(x * p.mean for x, p in zip(
                    weights, parts, strict=True)),
                "low": min(p.low for p in parts), "high": max(p.high for p in parts),
                "weights": tuple(weights), "parts": tuple(parts)}

    @staticmethod
    def _quantiles(raw: Any, value: Callable[[Any, tuple[Any, ...]], float]
                   ) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The table of ``quantiles: {probability: value}``, checked."""
        key = "quantiles"
        if not isinstance(raw, dict) or not raw:
            raise BadValue("a mapping of probability → value, like {0.5: 2ms, 1.0: 20ms}",
                           show(raw), field=(key,))

        def too_many(n: int) -> BadValue:
            return BadValue(f"at most {EMP_MAX_POINTS} quantiles with 0 (give samples for "
                            "more)", f"{n:,}", field=(key,))

        if len(raw) > EMP_MAX_POINTS:  # counted before parsing: a huge table is refused at once
            raise too_many(len(raw))
        qs: dict[float, float] = {}
        for p, v in raw.items():
            try:
                prob = parse_float(p, minimum=0, maximum=1)
            except BadValue:
                raise BadValue("a probability from 0 to 1", show(p),
                               field=(key, p)) from None
            if prob in qs:
                raise BadValue("each probability once", f"{show(p)} twice", field=(key, p))
            qs[prob] = value(v, (key, p))
        ps = sorted(qs)
        if ps[-1] != 1.0:
            raise BadValue("a 1.0 quantile (the largest value)", f"largest {ps[-1]:g}",
                           field=(key,))
        for a, b in pairwise(ps):
            if qs[b] < qs[a]:
                raise BadValue("values that do not decrease as the probability grows",
                               f"{a:g}: {qs[a]:g} but {b:g}: {qs[b]:g}", field=(key, b))
        if ps[0] > 0.0:  # below the lowest quantile given, its value
            qs[0.0] = qs[ps[0]]
            ps.insert(0, 0.0)
        if len(ps) > EMP_MAX_POINTS:  # the 0 added below the lowest can be one too many
            raise too_many(len(ps))
        return tuple(ps), tuple(qs[p] for p in ps)

    @classmethod
    def _build(cls, kind: str, values: dict[str, float]) -> dict[str, Any]:
        def need(*keys: str) -> None:
            missing = [k for k in keys if k not in values]
            if missing:
                raise BadValue(
                    f"{' and '.join(keys)} for {_a(kind)} distribution",
                    "no " + " or ".join(missing),
                    field=(missing[0],),
                )

        if kind == "fixed":
            if "value" in values and "mean" in values and values["value"] != values["mean"]:
                raise BadValue("value or mean for a fixed distribution, not two different ones",
                               show([values["value"], values["mean"]]), field=("mean",))
            if "value" not in values:
                need("mean")
            v = values.get("value", values.get("mean", 0.0))
            return {"kind": kind, "mean": v, "low": v, "high": v}
        if kind == "exponential":
            need("mean")
            return {"kind": kind, "mean": values["mean"], "low": 0.0, "high": math.inf}
        if kind == "uniform":
            need("min", "max")
            if values["min"] > values["max"]:
                raise BadValue("min ≤ max", f"min {values['min']} > max {values['max']}",
                               field=("max",))
            mid = (values["min"] + values["max"]) / 2
            return {"kind": kind, "mean": mid, "low": values["min"], "high": values["max"]}
        need("mean", "sigma")
        if values["mean"] <= 0:
            raise BadValue(f"a mean > 0 ({cls._unit}) for a lognormal distribution",
                           show(values["mean"]), field=("mean",))
        return {"kind": kind, "mean": values["mean"], "low": 0.0, "high": math.inf,
                "sigma": values["sigma"]}

    @model_validator(mode="after")
    def _bounded(self) -> _Dist:
        # The parsers bound values written with a unit; a bare number in a table
        # (values, quantiles) or a lognormal's sigma is checked here, so no value
        # the kernel draws from can overflow what it is added to.
        if self.sigma > MAX_SIGMA:
            raise BadValue(f"a lognormal sigma of at most {MAX_SIGMA:g}", show(self.sigma),
                           field=("sigma",))
        if self.kind == "mixture" and len(self.parts) != len(self.weights):
            raise BadValue("one weight per mixture component", f"{len(self.weights)} weights "
                           f"for {len(self.parts)} components")
        finite = [x for x in (self.mean, self.low, self.high, *self.table_x) if math.isfinite(x)]
        if finite and max(finite) > self._max:
            raise BadValue(f"values of at most {self._max_text} ({self._unit})",
                           f"{max(finite):g}")
        return self

    @classmethod
    def _out(cls, x: float) -> float | int:
        return x

    @model_serializer
    def _to_yaml(self) -> dict[str, Any]:
        # Serialise in the form a scenario file uses, so resolved output loads back.
        out = self._out
        if self.kind == "fixed":
            return {"distribution": "fixed", "value": out(self.mean)}
        if self.kind == "exponential":
            return {"distribution": "exponential", "mean": out(self.mean)}
        if self.kind == "uniform":
            return {"distribution": "uniform", "min": out(self.low), "max": out(self.high)}
        if self.kind == "empirical":
            return {"distribution": "empirical",
                    "quantiles": {p: out(x) for p, x in zip(self.table_p, self.table_x,
                                                            strict=True)}}
        if self.kind == "mixture":
            return {"distribution": "mixture",
                    "components": [{"weight": x, **p._to_yaml()}
                                   for x, p in zip(self.weights, self.parts, strict=True)]}
        return {"distribution": "lognormal", "mean": out(self.mean), "sigma": self.sigma}


class DurationDist(_Dist):
    """A distribution of durations, s (values parsed with parse_duration)."""

    _parse = staticmethod(parse_duration)
    _unit = "s"
    _max = float(MAX_DURATION_S)
    _max_text = "100 years"


class ScaleDist(_Dist):
    """A distribution of a dimensionless multiplier (plain numbers ≥ 0)."""

    _parse = staticmethod(partial(parse_float, minimum=0))
    _unit = "×"
    _max = 1e6
    _max_text = "1e6"


class SizeDist(_Dist):
    """A distribution of sizes, bytes (values parsed with parse_size)."""

    _parse = staticmethod(parse_size)
    _unit = "bytes"
    _max = float(MAX_VALUE_SIZE)
    _max_text = "4gb"

    @classmethod
    def _out(cls, x: float) -> float | int:
        # Sizes read back as whole bytes; only a uniform mean can be fractional.
        return int(x) if x.is_integer() else x


class CountDist(_Dist):
    """A distribution of counts (elements of a collection), parsed as integers."""

    _parse = staticmethod(parse_int)
    _unit = "elements"
    _max = float(1 << 32)
    _max_text = "4294967296"

    @classmethod
    def _out(cls, x: float) -> float | int:
        return int(x) if x.is_integer() else x
