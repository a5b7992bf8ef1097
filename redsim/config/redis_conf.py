"""Reading a real `redis.conf` the way Redis 7.2's `loadServerConfigFromString` does.

One directive per line; lines are trimmed, and blank lines and lines starting with
`#` are skipped (a `#` later in a line is an argument, as in Redis). Arguments are
split like `sdssplitargs`. Directive names are case-insensitive. A later line
replaces an earlier one, except for the directives that accumulate: `save` (and
`save ""` clears the list), `client-output-buffer-limit` (one entry per client
class), `rename-command`, `user`, `loadmodule` and `sentinel`. `include PATH`
reads another file at that point.

Differences from Redis, on purpose:
- an `include` path is relative to the including file's directory (Redis uses the
  server's working directory, which a simulator does not have); globs work as in
  Redis 7 (no match = nothing included);
- an include cycle is an error (Redis would recurse until it crashes);
- argument *values* are not checked here; the scenario schema checks the ones redsim
  models and reports errors against the conf file and line.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from redsim.config.directives import (
    DIRECTIVE_ARG_COUNTS,
    KNOWN_REDIS_DIRECTIVES,
    MULTI_ARG_DIRECTIVES,
    REDIS_DEFAULTS,
)
from redsim.config.errors import (
    MAX_CONFIG_BYTES,
    BadValue,
    ScenarioError,
    did_you_mean,
    read_regular_file,
    show,
)
from redsim.config.units import parse_size
from redsim.fileio import real_path

# The bytes C's isspace() accepts in the "C" locale; str.isspace() would also take
# Unicode spaces, which Redis treats as ordinary characters.
_SPACE = " \t\n\v\f\r"
_HEX = "0123456789abcdefABCDEF"
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "a": "\a"}

# Directives that accumulate one entry per line (each line's arguments joined).
_PER_LINE = frozenset({"user", "loadmodule", "sentinel"})
# Standard multi-argument configs: a single non-empty argument is split again, so
# `save "3600 1 300 100"` works (config.c, MULTI_ARG_CONFIG handling).
_RESPLIT = MULTI_ARG_DIRECTIVES - {"include", "rename-command", "user", "loadmodule", "sentinel"}
OBUF_CLASSES = {"normal": "normal", "replica": "replica", "slave": "replica", "pubsub": "pubsub"}
"""client-output-buffer-limit's client classes (``slave`` is ``replica``'s old name)."""
_BAD_DIRECTIVE = "Bad directive or wrong number of arguments"

# Builds the error for the line being read: (expected, found, hint) -> error.
_Fail = Callable[[str, str, "str | None"], ScenarioError]


@dataclass(frozen=True)
class ConfDirective:
    """One directive's effective arguments and where its last line is."""

    args: list[str]
    line: int
    file: str


def split_args(line: str) -> list[str] | None:
    """Split a config line into arguments like Redis's `sdssplitargs`.

    Double quotes take `\\n \\r \\t \\b \\a` and `\\xHH` escapes (any other escaped
    character stands for itself); single quotes take only `\\'`. A closing quote must
    be followed by a space or the end of the line. Returns None for unbalanced quotes
    or text right after a closing quote, as Redis does.
    """
    args: list[str] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return args
        current: list[str] = []
        in_dq = in_sq = False
        while True:
            c = line[i] if i < n else ""
            if in_dq:
                if c == "\\" and line[i + 1 : i + 2] == "x" and _is_hex(line[i + 2 : i + 4]):
                    current.append(chr(int(line[i + 2 : i + 4], 16)))
                    i += 3
                elif c == "\\" and i + 1 < n:
                    i += 1
                    current.append(_ESCAPES.get(line[i], line[i]))
                elif c == '"':
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                elif c == "":
                    return None  # unterminated quotes
                else:
                    current.append(c)
            elif in_sq:
                if c == "\\" and line[i + 1 : i + 2] == "'":
                    i += 1
                    current.append("'")
                elif c == "'":
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                elif c == "":
                    return None
                else:
                    current.append(c)
            elif c == "" or c in _SPACE:
                break
            elif c == '"':
                in_dq = True
            elif c == "'":
                in_sq = True
            else:
                current.append(c)
            i += 1
        args.append("".join(current))


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(ch in _HEX for ch in pair)


def quote_arg(arg: str) -> str:
    """Quote an argument so `split_args` gives it back (for joining args to text)."""
    if arg and not any(ch in _SPACE or ch in "\"'\\" for ch in arg):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"')
    for ch, name in (("\n", "n"), ("\r", "r"), ("\t", "t")):
        escaped = escaped.replace(ch, "\\" + name)
    return f'"{escaped}"'


def parse_redis_conf(path: str | os.PathLike[str]) -> dict[str, tuple[list[str], int]]:
    """Parse a redis.conf into {directive: (args, line number)}.

    Directive names are lower case. For accumulating directives the args are the
    concatenation of all their lines (`save` → ["3600", "1", "300", "100"]; one
    entry per line for `user`/`loadmodule`/`sentinel`), and the line is the last
    one. Raises ScenarioError naming the file and line for unknown directives,
    wrong argument counts and unbalanced quotes, or naming the file if unreadable.
    """
    return {name: (d.args, d.line) for name, d in read_redis_conf(path).items()}


def read_redis_conf(path: str | os.PathLike[str]) -> dict[str, ConfDirective]:
    """Like `parse_redis_conf`, but also says which file each directive came from
    (they differ when the conf uses `include`)."""
    state = _ConfState()
    state.load(Path(path), stack=())
    return state.result()


class _ConfState:
    """The directives read so far, merged the way Redis merges repeated lines."""

    def __init__(self) -> None:
        self.plain: dict[str, ConfDirective] = {}
        self.obuf: dict[str, list[str]] = {}  # client class -> [hard, soft, seconds]
        self.obuf_where: tuple[int, str] | None = None
        self.total = 0  # bytes read so far, includes counted each time

    def result(self) -> dict[str, ConfDirective]:
        out = dict(self.plain)
        if self.obuf_where is not None:
            args = [item for cls, limits in self.obuf.items() for item in [cls, *limits]]
            out["client-output-buffer-limit"] = ConfDirective(args, *self.obuf_where)
        return out

    def load(self, path: Path, stack: tuple[str, ...]) -> None:
        key = real_path(path)
        if key in stack:
            raise ScenarioError(
                file=str(path),
                expected="a redis.conf without include cycles",
                found=f"{path} includes itself (through {' → '.join(stack)})",
            )
        # A regular file of at most MAX_CONFIG_BYTES: `include /dev/zero` or a
        # FIFO would otherwise fill memory or block forever.
        raw = read_regular_file(path, what="redis.conf")
        # ... and all of them together too: a file including another many times
        # (no cycle, just repetition) would multiply the bound.
        self.total += len(raw)
        if self.total > MAX_CONFIG_BYTES:
            raise ScenarioError(
                file=str(path),
                expected=f"a redis.conf and its includes of at most {MAX_CONFIG_BYTES >> 20} MB"
                " in all",
                found=f"more ({self.total:,} bytes by this include)",
            )
        # Redis reads bytes; an odd byte in a comment must not stop us.
        text = raw.decode("utf-8", errors="replace")
        for index, raw_line in enumerate(text.split("\n")):
            self._line(path, index + 1, raw_line, (*stack, key))

    def _line(self, path: Path, lineno: int, raw_line: str, stack: tuple[str, ...]) -> None:
        line = raw_line.strip(" \t\r\n")
        if not line or line.startswith("#"):
            return
        argv = split_args(line)

        def fail(expected: str, found: str, hint: str | None) -> ScenarioError:
            return ScenarioError(
                file=str(path), line=lineno, expected=expected, found=found, hint=hint
            )

        if argv is None:
            raise fail(
                "balanced quotes", show(line), "Unbalanced quotes in configuration line"
            )
        if not argv:
            return
        name, args = argv[0].lower(), argv[1:]
        if name not in KNOWN_REDIS_DIRECTIVES and "." not in name:
            hint = did_you_mean(name, KNOWN_REDIS_DIRECTIVES)
            raise fail(
                "a Redis configuration directive",
                show(argv[0]),
                f"{_BAD_DIRECTIVE}; {hint}" if hint else _BAD_DIRECTIVE,
            )
        if name in _RESPLIT and len(args) == 1 and args[0]:
            resplit = split_args(args[0])
            if resplit is None:
                raise fail(
                    "balanced quotes", show(args[0]), "Unbalanced quotes in configuration line"
                )
            args = resplit
        low, high = DIRECTIVE_ARG_COUNTS.get(name, (1, 1))
        if len(args) < low or (high is not None and len(args) > high):
            raise fail(_count_text(low, high), _found_args(args), _BAD_DIRECTIVE)

        where = (lineno, str(path))
        if name == "include":
            self._include(path, args[0], stack)
        elif name == "save":
            self._save(args, where)
        elif name == "client-output-buffer-limit":
            self._obuf(args, where, fail)
        elif name == "rename-command":
            self._accumulate(name, args, where)
        elif name in _PER_LINE:
            self._accumulate(name, [" ".join(quote_arg(a) for a in args)], where)
        else:
            self.plain[name] = ConfDirective(args, *where)

    def _include(self, path: Path, target: str, stack: tuple[str, ...]) -> None:
        base = path.parent
        full = os.path.join(base, os.path.expanduser(target))
        if any(ch in target for ch in "*?["):
            for match in sorted(glob.glob(full)):
                self.load(Path(match), stack)
        else:
            self.load(Path(full), stack)

    def _save(self, args: list[str], where: tuple[int, str]) -> None:
        # `save ""` clears the save points; later save lines add to the list.
        if args == [""]:
            self.plain["save"] = ConfDirective([], *where)
            return
        previous = self.plain["save"].args if "save" in self.plain else []
        self.plain["save"] = ConfDirective([*previous, *args], *where)

    def _accumulate(self, name: str, args: list[str], where: tuple[int, str]) -> None:
        previous = self.plain[name].args if name in self.plain else []
        self.plain[name] = ConfDirective([*previous, *args], *where)

    def _obuf(self, args: list[str], where: tuple[int, str], fail: _Fail) -> None:
        if len(args) % 4:
            raise fail(
                "<class> <hard limit> <soft limit> <soft seconds>, repeated",
                _found_args(args),
                "Wrong number of arguments in buffer limit configuration.",
            )
        for j in range(0, len(args), 4):
            cls = OBUF_CLASSES.get(args[j].lower())
            if cls is None:
                raise fail(
                    "a client class (normal, replica or pubsub)",
                    show(args[j]),
                    "Invalid client class specified in buffer limit configuration.",
                )
            self.obuf[cls] = args[j + 1 : j + 4]
        self.obuf_where = where


def _count_text(low: int, high: int | None) -> str:
    if high == low:
        return f"exactly {low} argument" + ("" if low == 1 else "s")
    if high is None:
        return f"at least {low} argument" + ("" if low == 1 else "s")
    return f"{low} to {high} arguments"


def _found_args(args: list[str]) -> str:
    if not args:
        return "none"
    shown = " ".join(quote_arg(a) for a in args)
    return f"{len(args)}: {show(shown)}"


def _same_arg(a: str, b: str) -> bool:
    # Case-insensitive words (yes/YES, everysec), sizes compared in bytes (64mb
    # is 67108864), and "." for the working directory as "./".
    a, b = a.lower(), b.lower()
    if a == b or {a, b} <= {".", "./"}:
        return True
    try:
        return parse_size(a) == parse_size(b)
    except BadValue:
        return False


def _obuf_limits(args: list[str]) -> dict[str, list[str]] | None:
    """client-output-buffer-limit's arguments by client class (only the classes
    given); None if they do not parse."""
    if len(args) % 4:
        return None
    out: dict[str, list[str]] = {}
    for j in range(0, len(args), 4):
        cls = OBUF_CLASSES.get(args[j].lower())
        if cls is None:
            return None
        out[cls] = args[j + 1 : j + 4]
    return out


def is_default(name: str, text: str) -> bool:
    """Whether a directive's value (redis.conf text, as `server.unmodelled` keeps it)
    is Redis 7.2's default (`REDIS_DEFAULTS`). A directive without a default
    (include, user, rename-command, …) or a value that does not parse is not."""
    default = REDIS_DEFAULTS.get(name.lower())
    got = split_args(text)
    if default is None or got is None:
        return False
    want = split_args(default) or []
    if got == [""]:  # `notify-keyspace-events ""`: one empty argument, the empty value
        got = []
    if name.lower() == "client-output-buffer-limit":
        # Classes not written keep Redis's limits, as in Redis.
        given, base = _obuf_limits(got), _obuf_limits(want) or {}
        if given is None:
            return False
        mine = {**base, **given}
        return all(_same_arg(x, y) for c in base for x, y in zip(mine[c], base[c], strict=True))
    return len(got) == len(want) and all(
        _same_arg(x, y) for x, y in zip(got, want, strict=True))
