"""A cache trace's request as Redis sees it: its RESP size, reply and big arguments,
from the sizes the trace records (the key and value themselves are not in it).

The arithmetic is ``redsim/model/trace.py``'s (``_resp_size``, ``_reply_size``,
``_big_args``), called with stand-in arguments: those helpers read only the
length of each argument, so an argument of n bytes is passed as an object whose
``len()`` is n and no byte string is built (a value may be megabytes, and a
trace has millions of lines). ``redsim/model/protocol.py`` does the same sums in
the kernel, compiled, which ``redsim/config`` must not import (numba).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from redsim.model.trace import _big_args, _reply_size, _resp_size

MAX_STRING = 512 * 1024 * 1024
"""Longest key or value, bytes: Redis's string limit (``proto-max-bulk-len``'s default)."""


class _Blank:
    """An argument of ``n`` bytes whose content does not matter (see the module's
    docstring)."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


@lru_cache(maxsize=1 << 16)
def command_sizes(name: str, key_size: int, value_size: int | None = None,
                  ttl: int = 0) -> tuple[int, int, tuple[int, int, int, int]]:
    """``name key [value [EX ttl]]`` with a key of ``key_size`` bytes and a value of
    ``value_size`` (None: no value argument) and, when ``ttl`` > 0, ``EX ttl``:
    (request bytes, reply bytes (-1: a stored value), big arguments as
    ``trace._big_args`` gives them). Cached: a trace repeats few size combinations.
    """
    args: list[Any] = [_Blank(len(name)), _Blank(key_size)]
    if value_size is not None:
        args.append(_Blank(value_size))
        if ttl > 0:
            args += [_Blank(len("EX")), _Blank(len(str(ttl)))]
    return _resp_size(args), _reply_size(name, args), _big_args(args)
