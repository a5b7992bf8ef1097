"""Unit parsers: sizes follow Redis's memtoull, durations/costs/rates their suffixes."""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redsim.config.errors import BadValue
from redsim.config.units import (
    parse_bool,
    parse_cost_us,
    parse_duration,
    parse_float,
    parse_int,
    parse_rate,
    parse_size,
)

KB, MB, GB = 1024, 1024**2, 1024**3


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (123, 123),
        ("0", 0),
        ("1", 1),
        ("1b", 1),
        ("1B", 1),
        # memtoull: k/m/g are powers of 1000, kb/mb/gb powers of 1024, any case.
        ("1k", 1000),
        ("1K", 1000),
        ("1kb", KB),
        ("1KB", KB),
        ("1kB", KB),
        ("1m", 1_000_000),
        ("1mb", MB),
        ("64mb", 64 * MB),
        ("1g", 1_000_000_000),
        ("1gb", GB),
        ("60GB", 60 * GB),
        (" 2gb ", 2 * GB),
        # Extensions: decimals (rounded to a byte), underscores, YAML floats.
        ("1.5gb", 1610612736),
        ("0.5kb", 512),
        ("1_000", 1000),
        ("1_000kb", 1000 * KB),
        (1024.0, 1024),
        ("1.0001k", 1000),
    ],
)
def test_parse_size(value: Any, expected: int) -> None:
    assert parse_size(value) == expected
    assert isinstance(parse_size(value), int)


@pytest.mark.parametrize(
    "value",
    [
        "-1",
        -1,
        "-1kb",
        "1 kb",  # memtoull wants the unit right after the digits
        "1tb",
        "1kib",
        "kb",
        "",
        "abc",
        "1e3",
        "1__0",
        True,
        None,
        [1],
        {"a": 1},
        math.nan,
        math.inf,
        "9" * 30 + "gb",
    ],
)
def test_parse_size_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^expected a size .*, found "):
        parse_size(value)


@pytest.mark.parametrize(
    ("value", "bare", "expected"),
    [
        ("1s", "s", 1.0),
        ("500ms", "s", 0.5),
        ("200us", "s", 0.0002),
        ("200µs", "s", 0.0002),  # U+00B5
        ("200μs", "s", 0.0002),  # U+03BC
        ("100ns", "s", 1e-7),
        ("2m", "s", 120.0),
        ("10min", "s", 600.0),
        ("1h", "s", 3600.0),
        ("1d", "s", 86400.0),
        ("2w", "s", 1209600.0),
        ("1.5s", "s", 1.5),
        ("10 ms", "s", 0.01),
        ("1MS", "s", 0.001),
        (5, "s", 5.0),
        (2.5, "s", 2.5),
        ("5", "s", 5.0),
        ("5", "ms", 0.005),
        (5, "us", 5e-6),
        ("5s", "ms", 5.0),  # an explicit unit wins over the bare unit
        ("0", "s", 0.0),
        ("1e-3", "s", 0.001),
    ],
)
def test_parse_duration(value: Any, bare: str, expected: float) -> None:
    assert parse_duration(value, bare) == expected


@pytest.mark.parametrize(
    "value", ["-1s", -1, -0.5, "1x", "s", "", "1 2s", True, None, [], "1e999w", math.inf]
)
def test_parse_duration_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^expected a duration ≥ 0 .*, found "):
        parse_duration(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (2.5, 2.5),
        (3, 3.0),
        ("2.5", 2.5),
        ("3us", 3.0),
        ("1ms", 1000.0),
        ("500ns", 0.5),
        ("1s", 1_000_000.0),
        ("0.2ns", 0.0002),
    ],
)
def test_parse_cost_us(value: Any, expected: float) -> None:
    assert parse_cost_us(value) == expected


@pytest.mark.parametrize("value", ["-1", -1.0, "1 parsec", "abc", True, None])
def test_parse_cost_us_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^expected a CPU cost"):
        parse_cost_us(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (25000, 25000.0),
        (0.5, 0.5),
        ("25000", 25000.0),
        ("25000/s", 25000.0),
        ("25k/s", 25000.0),
        ("25K/s", 25000.0),
        ("1.5k/s", 1500.0),
        ("25k", 25000.0),
        ("90000/min", 1500.0),
        ("60/m", 1.0),  # after the slash, m is minutes
        ("2m/s", 2_000_000.0),  # before it, m is mega
        ("100/ms", 100_000.0),
        ("3600/h", 1.0),
        ("1 / us", 1_000_000.0),
        ("0/s", 0.0),
    ],
)
def test_parse_rate(value: Any, expected: float) -> None:
    assert parse_rate(value) == expected


@pytest.mark.parametrize(
    "value", ["-5/s", -1, "-1k", "5/x", "5/", "abc", "k/s", "5g/s", True, None, {}]
)
def test_parse_rate_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match=r"^expected a rate ≥ 0"):
        parse_rate(value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("yes", True),
        ("YES", True),
        ("no", False),
        ("No", False),
        ("true", True),
        ("False", False),
        ("on", True),
        ("off", False),
    ],
)
def test_parse_bool(value: Any, expected: bool) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize("value", ["maybe", "", "y", 1, 0, None, 1.0])
def test_parse_bool_rejects(value: Any) -> None:
    with pytest.raises(ValueError, match="expected yes/no"):
        parse_bool(value)


@pytest.mark.parametrize(
    ("value", "kwargs", "expected"),
    [
        (5, {}, 5),
        ("10_000", {}, 10000),
        (" 7 ", {"minimum": 1}, 7),
        (3.0, {}, 3),
        (64, {"minimum": 1, "maximum": 64}, 64),
    ],
)
def test_parse_int(value: Any, kwargs: dict[str, int], expected: int) -> None:
    assert parse_int(value, **kwargs) == expected


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (0, {"minimum": 1}, "expected an integer ≥ 1, found 0"),
        (65, {"minimum": 1, "maximum": 64}, "expected an integer between 1 and 64, found 65"),
        ("1.5", {}, "expected an integer, found '1.5'"),
        (1.5, {}, "expected an integer, found 1.5"),
        (True, {}, "expected an integer, found true"),
        ("ten", {}, "expected an integer, found 'ten'"),
    ],
)
def test_parse_int_rejects(value: Any, kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_int(value, **kwargs)
    assert str(info.value) == message


def test_parse_float_bounds() -> None:
    assert parse_float("0.99", minimum=0, exclusive_min=True) == 0.99
    with pytest.raises(ValueError, match="expected a number > 0, found 0"):
        parse_float(0, minimum=0, exclusive_min=True)
    with pytest.raises(ValueError, match="expected a number"):
        parse_float("nan")


def test_bad_value_carries_expected_and_found_and_pickles() -> None:
    with pytest.raises(BadValue) as info:
        parse_size("12 parsecs")
    err = info.value
    assert err.found == "'12 parsecs'"
    assert err.expected.startswith("a size in bytes")
    copy = pickle.loads(pickle.dumps(err))
    assert (copy.expected, copy.found, str(copy)) == (err.expected, err.found, str(err))


@given(st.integers(min_value=0, max_value=2**32), st.sampled_from(sorted({
    "": 1, "b": 1, "k": 1000, "kb": 1024, "m": 10**6, "mb": 1024**2, "g": 10**9, "gb": 1024**3,
}.items())))
def test_parse_size_is_number_times_multiplier(n: int, unit: tuple[str, int]) -> None:
    suffix, mult = unit
    assert parse_size(f"{n}{suffix}") == n * mult
    assert parse_size(f"{n}{suffix.upper()}") == n * mult


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["ns", "us", "ms", "s"]))
def test_cost_and_duration_agree(n: int, unit: str) -> None:
    # The same text read as a cost (µs) and as a duration (s) differs by exactly 1e6.
    assert math.isclose(parse_cost_us(f"{n}{unit}"), parse_duration(f"{n}{unit}") * 1e6,
                        rel_tol=1e-12)
