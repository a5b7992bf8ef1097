"""Errors of the configuration layer, and the helpers that make them readable.

Every mistake in a scenario file, a `redis.conf` or a `--set` override surfaces as one
`ScenarioError` whose message names where the mistake is (file, line, field path),
what was expected there and what was found, plus a suggestion when one is obvious.
Unit parsers raise `BadValue`, a `ValueError` that carries the same expected/found pair
so the loader can build a `ScenarioError` without re-parsing a message.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import Any

from redsim.fileio import IRREGULAR, TOO_LARGE, UNREADABLE, RefusedFile, read_bounded

# Longest rendering of a found value; a whole mis-indented section pasted into a
# message helps nobody.
_MAX_SHOWN = 80


def show_path(path: Any) -> str:
    """A file path for an error message: quoted and never cut, since the file's
    name is what the reader needs (``show`` cuts long values)."""
    return repr(str(path))


def show(value: Any) -> str:
    """Render a found value for an error message: strings quoted, long values cut."""
    if isinstance(value, str):
        text = repr(value)
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    else:
        try:
            text = repr(value)
        except ValueError:  # an int beyond sys.get_int_max_str_digits() has no repr
            text = f"a {type(value).__name__}"
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 1] + "…"
    return text


def _norm(name: str) -> str:
    # Redis directive names are case-insensitive and people mix `_` and `-`.
    return name.lower().replace("_", "-")


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most similar to `name` (difflib ratio ≥ 0.6), or None.

    The comparison ignores case and treats `_` like `-`, so `maxmemory_polcy` finds
    `maxmemory-policy`; the candidate is returned as spelled in `candidates`.
    """
    by_norm: dict[str, str] = {}
    for cand in candidates:
        by_norm.setdefault(_norm(str(cand)), str(cand))
    matches = difflib.get_close_matches(_norm(str(name)), list(by_norm), n=1, cutoff=0.6)
    return by_norm[matches[0]] if matches else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A "did you mean 'x'?" hint for `name`, or None when nothing is close."""
    match = closest(name, candidates)
    return f"did you mean {match!r}?" if match is not None else None


class BadValue(ValueError):
    """A value that does not parse or is out of range.

    Attributes:
        expected: what would have been accepted, e.g. "a size like 64mb".
        found: the offending value as shown to the user (already rendered).
        field: sub-path below the validated object where the problem is, for checks
            that see a whole model (e.g. ("rate",) from a client group's check).
        hint: an optional suggestion.
    """

    def __init__(
        self,
        expected: str,
        found: str,
        *,
        field: tuple[str | int, ...] = (),
        hint: str | None = None,
    ) -> None:
        super().__init__(f"expected {expected}, found {found}")
        self.expected = expected
        self.found = found
        self.field = field
        self.hint = hint

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments do not survive the default Exception pickling,
        # and errors travel between processes in sweeps.
        return (_rebuild_bad_value, (self.expected, self.found, self.field, self.hint))


def _rebuild_bad_value(
    expected: str, found: str, field: tuple[str | int, ...], hint: str | None
) -> BadValue:
    return BadValue(expected, found, field=field, hint=hint)


class ScenarioError(Exception):
    """A mistake in a scenario, a redis.conf or an override, as one clear message.

    Attributes:
        file: the file the mistake is in (scenario YAML or redis.conf), if known.
        location: where in it: a field path like `clients[0].pool.max-size`, a Redis
            directive name, or "" when the whole file is at fault.
        expected: what would have been accepted.
        found: what was there, rendered for the user.
        hint: a suggestion such as "did you mean 'maxmemory-policy'?", if any.
        line: 1-based line number in `file`, if known.

    `str(err)` reads like `scenarios/x.yaml:12: clients[0].pool.max-size: expected an
    integer ≥ 1, found 0`, leaving out the parts that are unknown.
    """

    def __init__(
        self,
        *,
        expected: str,
        found: str,
        file: str | None = None,
        location: str = "",
        hint: str | None = None,
        line: int | None = None,
    ) -> None:
        self.file = file
        self.location = location
        self.expected = expected
        self.found = found
        self.hint = hint
        self.line = line
        super().__init__(self._message())

    def _message(self) -> str:
        parts: list[str] = []
        # A name with a NUL byte, a newline or an unencodable character is quoted:
        # the message stays one line a terminal shows as it is.
        file = self.file if self.file is None or self.file.isprintable() else repr(self.file)
        if file is not None and self.line is not None:
            parts.append(f"{file}:{self.line}")
        elif file is not None:
            parts.append(file)
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.location:
            parts.append(self.location)
        parts.append(f"expected {self.expected}, found {self.found}")
        text = ": ".join(parts)
        if self.hint:
            text += f" ({self.hint})"
        return text

    def __str__(self) -> str:
        return self._message()

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_scenario_error,
            (self.expected, self.found, self.file, self.location, self.hint, self.line),
        )


def _rebuild_scenario_error(
    expected: str,
    found: str,
    file: str | None,
    location: str,
    hint: str | None,
    line: int | None,
) -> ScenarioError:
    return ScenarioError(
        expected=expected, found=found, file=file, location=location, hint=hint, line=line
    )


MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Most bytes read from a scenario, sweep, calibration or redis.conf file (16 MB).
Real ones are a few KB (Redis 7.2's stock redis.conf is 107 KB); the bound keeps a
path to /dev/zero or a log file from filling memory."""

def _mb(limit: int) -> str:
    return f"{limit / 2**20:g} MB"


def read_regular_file(
    path: str | os.PathLike[str], *, what: str, limit: int = MAX_CONFIG_BYTES
) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `limit` bytes
    (``redsim.fileio.read_bounded``: a FIFO or a device is refused before it is
    opened, and at most `limit` + 1 bytes are read whatever the file does).

    Args:
        path: the file.
        what: what the file is, for messages ("redis.conf", "scenario file").
        limit: most bytes accepted.

    Raises:
        ScenarioError: naming the file, saying what was expected and what was found.
    """
    try:
        return read_bounded(path, limit)
    except RefusedFile as exc:
        expected = {UNREADABLE: f"a readable {what}", IRREGULAR: f"a regular file ({what})",
                    TOO_LARGE: f"a {what} of at most {_mb(limit)}"}[exc.reason]
        raise ScenarioError(file=os.fspath(path), expected=expected, found=exc.found) from None


class UnmodelledDirectiveWarning(UserWarning):
    """Redis directives in a scenario or redis.conf that redsim keeps but does not model."""
