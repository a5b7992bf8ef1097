"""Parsers for the values a scenario may write with units: sizes, durations, CPU
costs, rates, booleans and plain numbers.

Every parser is a pure function that accepts what YAML or a redis.conf line produces
(ints, floats, strings) and raises `BadValue` (a `ValueError`) with a short
"expected …, found …" message otherwise. Booleans are never accepted as numbers:
`maxmemory: yes` is a mistake, not 1 byte.

Arithmetic goes through `fractions.Fraction` so that `200us` is exactly the float
nearest 0.0002 s and `500ns` is exactly 0.5 µs, not a value one ulp away.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from redsim.config.errors import BadValue, show

# Largest value any parser returns as an int: Redis stores sizes in (unsigned) long
# long and rejects overflow; we keep to the signed range so every consumer is safe.
MAX_INT = 2**63 - 1

# Longest duration any parser returns: 100 years (of 365.25 days), 3,155,760,000 s.
# Well past any run, and small enough that every time the model derives from it
# stays exact and finite: in µs it is below 2**53 (a float64 holds it as an exact
# integer), in ns below 2**63 (int64), and added to a run's clock it cannot
# overflow. Without it `ttl: 1e308` validated and then overflowed int64 at run time.
MAX_DURATION_S = 36525 * 86400
MAX_DURATION_TEXT = "at most 100 years"

# Highest rate any parser returns, per second: 10**9, a thousand times what one
# Redis main thread serves; every event at a higher rate would still be stepped
# through one by one, so a run would never end (`rate: 1e308` hung).
MAX_RATE = 1e9
MAX_RATE_TEXT = "at most 1e9 per second (1000m/s)"

# Redis `memtoull` (util.c) multipliers: k/m/g are decimal, kb/mb/gb binary.
SIZE_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1024,
    "m": 1000**2,
    "mb": 1024**2,
    "g": 1000**3,
    "gb": 1024**3,
}

# Duration units in nanoseconds, so conversions between them are exact integer ratios.
DURATION_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU, what many keyboards produce
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "min": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
    "d": 86400 * 1_000_000_000,
    "w": 7 * 86400 * 1_000_000_000,
}

# Rate denominators in seconds. Inside a rate, `m` before the slash is mega (25m/s),
# after it is minutes (90000/m): the slash removes the ambiguity.
RATE_PER: dict[str, Fraction] = {
    "s": Fraction(1),
    "sec": Fraction(1),
    "second": Fraction(1),
    "ms": Fraction(1, 1000),
    "us": Fraction(1, 1_000_000),
    "µs": Fraction(1, 1_000_000),
    "μs": Fraction(1, 1_000_000),
    "m": Fraction(60),
    "min": Fraction(60),
    "minute": Fraction(60),
    "h": Fraction(3600),
    "hour": Fraction(3600),
}
RATE_MULTIPLIERS: dict[str, int] = {"": 1, "k": 1000, "m": 1_000_000}

_BOOL_WORDS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}

# A decimal number: optional sign, digits with single underscores between them
# (like Python's `1_000`), optional fraction and exponent.
_DIGITS = r"\d+(?:_\d+)*"
_DECIMAL = rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})"
# Exponents are capped at 3 digits: Fraction("1e999999999") would take forever.
_NUMBER = rf"{_DECIMAL}(?:[eE][+-]?\d{{1,3}})?"
# Sizes follow memtoull: no space between number and unit, no exponent.
_SIZE_RE = re.compile(rf"({_DECIMAL})([a-zA-Z]*)", re.ASCII)
_DURATION_RE = re.compile(rf"({_NUMBER})\s*([a-zA-Zµμ]*)", re.ASCII)
_RATE_RE = re.compile(rf"({_NUMBER})\s*([kKmM]?)\s*(?:/\s*([a-zA-Zµμ]+))?", re.ASCII)
_INT_RE = re.compile(rf"[+-]?{_DIGITS}", re.ASCII)
_FLOAT_RE = re.compile(_NUMBER, re.ASCII)

SIZE_EXPECTED = "a size in bytes ≥ 0 like 64mb (units b, k, kb, m, mb, g, gb)"
RATE_EXPECTED = "a rate ≥ 0 per second like 25000, 25k/s or 90000/min"
BOOL_EXPECTED = "yes/no (or true/false)"


_UNIT_WORDS = {"ns": "nanoseconds", "us": "µs", "ms": "milliseconds", "s": "seconds"}


def _duration_expected(bare_unit: str) -> str:
    unit = _UNIT_WORDS.get(bare_unit, bare_unit)
    return f"a duration ≥ 0 like 500us, 2ms, 30s or 10m (a bare number is in {unit})"


def _fraction_of(text: str, expected: str, original: Any) -> Fraction:
    # Fraction() rejects underscores; the regexes already checked where they are.
    try:
        return Fraction(text.replace("_", ""))
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        raise BadValue(expected, f"{show(original)} (too long)") from None


def _number_of(v: Any) -> Fraction | None:
    """An exact Fraction for a finite int/float that is not a bool, else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float) and math.isfinite(v):
        return Fraction(v)
    return None


def _to_float(value: Fraction, expected: str, original: Any) -> float:
    try:
        result = float(value)
    except OverflowError:
        raise BadValue(expected, f"{show(original)} (too large)") from None
    if not math.isfinite(result):
        raise BadValue(expected, f"{show(original)} (too large)")
    return result


def parse_size(v: Any) -> int:
    """Parse a memory size into bytes, the way Redis's `memtoull` does.

    Ints pass through (must be ≥ 0). Strings take an optional case-insensitive unit:
    `b` or none = 1, `k` = 1000, `kb` = 1024, `m` = 10**6, `mb` = 1024**2,
    `g` = 10**9, `gb` = 1024**3, written right after the number as Redis requires.
    Extensions beyond Redis: a decimal number (`1.5gb`, rounded to the nearest
    byte), `_` between digits (`1_000`), and floats from YAML (rounded).
    """
    number = _number_of(v)
    if number is None and isinstance(v, str):
        m = _SIZE_RE.fullmatch(v.strip())
        if m is None or m.group(2).lower() not in SIZE_UNITS:
            raise BadValue(SIZE_EXPECTED, show(v))
        number = _fraction_of(m.group(1), SIZE_EXPECTED, v) * SIZE_UNITS[m.group(2).lower()]
    if number is None:
        raise BadValue(SIZE_EXPECTED, show(v))
    if number < 0:
        raise BadValue(SIZE_EXPECTED, show(v))
    result = round(number)  # Fraction rounds half to even, exactly
    if result > MAX_INT:
        raise BadValue(SIZE_EXPECTED, f"{show(v)} (too large)")
    return result


def _duration_fraction(v: Any, bare_unit: str, expected: str) -> Fraction:
    """A duration as an exact Fraction of nanoseconds."""
    if bare_unit not in DURATION_UNITS_NS:
        raise ValueError(f"bare_unit must be one of {sorted(DURATION_UNITS_NS)}")
    number = _number_of(v)
    if number is not None:
        ns = number * DURATION_UNITS_NS[bare_unit]
    elif isinstance(v, str):
        m = _DURATION_RE.fullmatch(v.strip())
        unit = m.group(2).lower() if m is not None else None
        if m is None or (unit and unit not in DURATION_UNITS_NS):
            raise BadValue(expected, show(v))
        ns = _fraction_of(m.group(1), expected, v) * DURATION_UNITS_NS[unit or bare_unit]
    else:
        raise BadValue(expected, show(v))
    if ns < 0:
        raise BadValue(expected, show(v))
    return ns


def parse_duration(v: Any, bare_unit: str = "s") -> float:
    """Parse a duration into seconds.

    Units: `ns`, `us` (or `µs`), `ms`, `s`, `m` (minutes; also `min`), `h`, `d`,
    `w`, case-insensitive, optionally separated from the number by spaces. A bare
    number (int, float or unit-less string) is in `bare_unit` ("s", "ms", "us", …).
    Negative durations and durations over MAX_DURATION_S (100 years) are errors.
    """
    expected = _duration_expected(bare_unit)
    ns = _duration_fraction(v, bare_unit, expected)
    if ns > MAX_DURATION_S * DURATION_UNITS_NS["s"]:
        raise BadValue(f"{expected}, {MAX_DURATION_TEXT}", f"{show(v)} (too large)")
    return _to_float(ns / DURATION_UNITS_NS["s"], expected, v)


def parse_cost_us(v: Any) -> float:
    """Parse a CPU cost into microseconds: a bare number is µs, `1ms` → 1000.0,
    `500ns` → 0.5. At most MAX_DURATION_S (100 years), as any duration."""
    expected = "a CPU cost ≥ 0 like 2.5 (µs), 500ns or 1ms"
    ns = _duration_fraction(v, "us", expected)
    if ns > MAX_DURATION_S * DURATION_UNITS_NS["s"]:
        raise BadValue(f"{expected}, {MAX_DURATION_TEXT}", f"{show(v)} (too large)")
    return _to_float(ns / DURATION_UNITS_NS["us"], expected, v)


def parse_rate(v: Any) -> float:
    """Parse an event rate into events per second.

    Accepts a number (per second) or `N[k|m][/unit]`: `25000/s`, `25k/s`, `1.5k/s`,
    `90000/min`, `100/ms`, `2m/h`. `k` = 10**3 and `m` = 10**6 as multipliers; the
    unit after `/` is one of s, ms, us, m/min (minutes), h. Negative rates are errors.
    """
    number = _number_of(v)
    if number is None and isinstance(v, str):
        m = _RATE_RE.fullmatch(v.strip())
        per = m.group(3).lower() if m is not None and m.group(3) else "s"
        if m is None or per not in RATE_PER:
            raise BadValue(RATE_EXPECTED, show(v))
        mult = RATE_MULTIPLIERS[m.group(2).lower()]
        number = _fraction_of(m.group(1), RATE_EXPECTED, v) * mult / RATE_PER[per]
    if number is None or number < 0:
        raise BadValue(RATE_EXPECTED, show(v))
    if number > MAX_RATE:
        raise BadValue(f"{RATE_EXPECTED}, {MAX_RATE_TEXT}", f"{show(v)} (too large)")
    return _to_float(number, RATE_EXPECTED, v)


MIN_BANDWIDTH, MAX_BANDWIDTH = 1, 10**15  # bytes/s
BANDWIDTH_EXPECTED = ("a bandwidth like 200mb/s or 1.5gb/s "
                      "(a size per second; a bare number is bytes/s)")


def parse_bandwidth(v: Any) -> float:
    """Parse a bandwidth into bytes per second: a number (bytes/s) or a size as
    `parse_size` reads it (Redis units: 1mb = 1024², 1m = 10⁶) followed by `/s`:
    `200mb/s`, `1gb/s`; a decimal like `4.5gb/s` is allowed."""
    number = _number_of(v)
    if number is None and isinstance(v, str):
        text = v.strip().lower()
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)\s*/\s*s", text)
        if m is None:
            raise BadValue(BANDWIDTH_EXPECTED, show(v))
        try:
            unit = parse_size("1" + m.group(2)) if m.group(2) else 1
        except BadValue:
            raise BadValue(BANDWIDTH_EXPECTED, show(v)) from None
        number = _fraction_of(m.group(1), BANDWIDTH_EXPECTED, v) * unit
    if number is None or number <= 0:
        raise BadValue(BANDWIDTH_EXPECTED, show(v))
    # 1 B/s to 1 PB/s: below, one page or one fsync'd append would take longer
    # than any run (times the model then adds up overflow to inf); above, no device.
    if not MIN_BANDWIDTH <= number <= MAX_BANDWIDTH:
        raise BadValue(f"{BANDWIDTH_EXPECTED}, from 1 byte/s to 1 PB/s (1e15 bytes/s)",
                       f"{show(v)} (too {'small' if number < MIN_BANDWIDTH else 'large'})")
    return _to_float(number, BANDWIDTH_EXPECTED, v)


LINK_EXPECTED = ("a link rate in bits like 1gbit or 10gbit/s (decimal: 1gbit = 10⁹ bits/s), "
                 "or a bandwidth like 125mb/s")
_BIT_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12}


def parse_link_rate(v: Any) -> float:
    """Parse a network link's rate into bytes per second: bits as network links
    are sold (``1gbit``, ``10gbit/s``, ``100mbit``; decimal prefixes, 8 bits a
    byte), or a bandwidth as ``parse_bandwidth`` reads it (``125mb/s``)."""
    if isinstance(v, str):
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?bit)s?(?:\s*/\s*s)?", v.strip().lower())
        if m is not None:
            bits = _fraction_of(m.group(1), LINK_EXPECTED, v) * _BIT_UNITS[m.group(2)]
            if not 8 * MIN_BANDWIDTH <= bits <= 8 * MAX_BANDWIDTH:
                raise BadValue(f"{LINK_EXPECTED}, from 8 bits/s to 8 Pbit/s", show(v))
            return _to_float(bits / 8, LINK_EXPECTED, v)
    try:
        return parse_bandwidth(v)
    except BadValue:
        raise BadValue(LINK_EXPECTED, show(v)) from None


def parse_bool(v: Any) -> bool:
    """Parse a boolean: YAML's true/false, Redis's yes/no, or on/off (any case)."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in _BOOL_WORDS:
        return _BOOL_WORDS[v.strip().lower()]
    raise BadValue(BOOL_EXPECTED, show(v))


def _range_text(kind: str, minimum: Any, maximum: Any, *, exclusive_min: bool = False) -> str:
    low = ">" if exclusive_min else "≥"
    if minimum is not None and maximum is not None and not exclusive_min:
        return f"{kind} between {minimum} and {maximum}"
    if minimum is not None and maximum is not None:
        return f"{kind} {low} {minimum} and ≤ {maximum}"
    if minimum is not None:
        return f"{kind} {low} {minimum}"
    if maximum is not None:
        return f"{kind} ≤ {maximum}"
    return kind


def parse_int(v: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Parse an integer (int, integral float, or a string like `10_000`) and check
    `minimum ≤ v ≤ maximum`."""
    expected = _range_text("an integer", minimum, maximum)
    number = _number_of(v)
    if number is None and isinstance(v, str) and _INT_RE.fullmatch(v.strip()):
        number = _fraction_of(v.strip(), expected, v)
    if number is None or number.denominator != 1:
        raise BadValue(expected, show(v))
    result = int(number)
    if (minimum is not None and result < minimum) or (maximum is not None and result > maximum):
        raise BadValue(expected, show(v))
    if abs(result) > MAX_INT:
        raise BadValue(expected, f"{show(v)} (too large)")
    return result


def parse_float(
    v: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_min: bool = False,
) -> float:
    """Parse a plain (unit-less) finite number and check its range; `exclusive_min`
    makes the lower bound strict (`> minimum`)."""
    expected = _range_text("a number", minimum, maximum, exclusive_min=exclusive_min)
    number = _number_of(v)
    if number is None and isinstance(v, str) and _FLOAT_RE.fullmatch(v.strip()):
        number = _fraction_of(v.strip(), expected, v)
    if number is None:
        raise BadValue(expected, show(v))
    result = _to_float(number, expected, v)
    if minimum is not None and (result <= minimum if exclusive_min else result < minimum):
        raise BadValue(expected, show(v))
    if maximum is not None and result > maximum:
        raise BadValue(expected, show(v))
    return result


# ---------------------------------------------------------------------------------
# Formatting: a value back in the units a scenario file writes (figures, tables).

# The units a value is shown in, largest first, each with its size in the model's
# unit (s, bytes, 1/s, bytes/s). Every spelling is one the parser of that kind reads
# back (`20m`, `1.5GB`, `25k/s`, `200MB/s`); sizes are Redis's binary `kb`/`mb`/`gb`.
QUANTITY_UNITS: dict[str, tuple[tuple[str, float], ...]] = {
    "duration": (("w", 7 * 86400.0), ("d", 86400.0), ("h", 3600.0), ("m", 60.0),
                 ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)),
    "size": (("GB", float(SIZE_UNITS["gb"])), ("MB", float(SIZE_UNITS["mb"])),
             ("KB", float(SIZE_UNITS["kb"])), ("B", 1.0)),
    "rate": (("M/s", 1e6), ("k/s", 1e3), ("/s", 1.0)),
    "bandwidth": (("GB/s", float(SIZE_UNITS["gb"])), ("MB/s", float(SIZE_UNITS["mb"])),
                  ("KB/s", float(SIZE_UNITS["kb"])), ("B/s", 1.0)),
}

# What each kind's parser reads, and the value it gives for it in the model's unit:
# how `parsed_quantity` tells a field's kind from its parser. Bandwidth comes before
# rate: `parse_bandwidth` reads `1k/s` too (1000 bytes/s), `parse_rate` not `1kb/s`.
_PROBES = (("duration", "1s", 1.0), ("size", "1kb", 1024.0), ("bandwidth", "1kb/s", 1024.0),
           ("rate", "1k/s", 1000.0))


def parsed_quantity(parse: Any) -> tuple[str, float] | None:
    """What a field's parser reads: ``(kind, size of the field's 1 in the model's
    unit)``, kind one of ``QUANTITY_UNITS`` (``parse_duration`` gives
    ``("duration", 1.0)``, a millisecond field ``("duration", 0.001)``,
    ``parse_size`` ``("size", 1.0)``), or None for anything else (a plain
    number, a choice, a mapping).

    Told by what the parser accepts, so wrappers (a bound, ``None`` let through,
    ``functools.partial``) need no listing: the kind is the first whose spelling
    (`1s`, `1kb`, `1kb/s`, `1k/s`) the parser reads.
    """
    if not callable(parse):
        return None
    for kind, probe, model in _PROBES:
        try:
            got = parse(probe)
        except Exception:  # noqa: BLE001 - any refusal means "not this kind"
            continue
        if isinstance(got, (int, float)) and not isinstance(got, bool) and got > 0:
            return kind, model / got
    return None


def format_number(x: float) -> str:
    """A number in at most three significant digits, whole numbers in full,
    without an exponent: 20, 1.33, 21.1, 1500."""
    whole = round(x)
    if abs(x - whole) <= 1e-9 * max(1.0, abs(x)):
        return str(int(whole))
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def common_unit(kind: str, values: Any) -> tuple[str, float]:
    """One unit for a whole axis of ``kind`` (values in the model's unit): the
    largest in which the largest magnitude is at least 1 (the smallest unit when
    every value is below it; the model's unit when none is finite and not 0)."""
    units = QUANTITY_UNITS[kind]
    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v))]
    top = max(finite, default=0.0)
    if top == 0:
        return next((n, f) for n, f in units if f == 1.0)
    return next(((n, f) for n, f in units if top >= f * (1 - 1e-12)), units[-1])


def format_quantity(value: float, kind: str, unit: str | None = None) -> str:
    """``value`` (in the model's unit: s, bytes, 1/s, bytes/s) as a scenario file
    would write it: 1200 s as ``20m``, 1209600 s as ``2w``, 64 MiB as ``64MB``,
    25000/s as ``25k/s``.

    With ``unit`` (a name in ``QUANTITY_UNITS[kind]``) the value is shown in it;
    without, in the largest unit in which it is a whole number below 1000 (``90m``,
    ``10d``), else the largest in which it is at least 1, to three significant
    digits (``1.33h``, ``1.5GB``). 0 is ``0``.
    """
    units = QUANTITY_UNITS[kind]
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if unit is not None:
        factor = dict(units)[unit]
        return f"{format_number(v / factor)}{unit}" if v else "0"
    if v == 0:
        return "0"
    above = [(n, f) for n, f in units if abs(v) >= f * (1 - 1e-12)] or [units[-1]]
    for n, f in above:
        x = v / f
        if abs(x) < 1000 and abs(x - round(x)) <= 1e-9 * abs(x):
            return f"{format_number(x)}{n}"
    n, f = above[0]
    return f"{format_number(v / f)}{n}"
