"""Opening a file a user named, safely: regular files only, bounded in size.

A path in a scenario (a ``redis_conf``, a trace, a samples file, a sweep's
``base``) may name anything: a FIFO would block the reader until some writer
comes (forever, in a sweep), a device such as ``/dev/zero`` never ends, a log
file may be huge. Everything that reads such a path goes through ``open_regular``
(or ``read_bounded``), which refuses those before reading and says why in a
``RefusedFile`` that each caller turns into its own error (``ScenarioError``,
``TraceError``, ``BadValue``) with its own wording. No dependencies, so every
layer can use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

UNREADABLE = "unreadable"
IRREGULAR = "irregular"
TOO_LARGE = "too large"

_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


BAD_NAME = "not a name a file can have (a NUL byte, or characters the file system cannot encode)"
"""What ``RefusedFile`` says of a path the OS cannot even look up."""


class RefusedFile(Exception):
    """Why a path was not read.

    Attributes:
        reason: ``UNREADABLE`` (``found``: the OS's words), ``IRREGULAR`` (``found``:
            what the path is, e.g. "a FIFO (named pipe)") or ``TOO_LARGE``
            (``found``: its size, or that it grew while read).
        found: what was there, for the message.
    """

    def __init__(self, reason: str, found: str) -> None:
        super().__init__(f"{reason}: {found}")
        self.reason = reason
        self.found = found


def file_kind(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words ("a directory", "a FIFO ...")."""
    for test, name in _FILE_KINDS:
        if test(mode):
            return name
    return "not a regular file"


def real_path(path: str | os.PathLike[str]) -> str:
    """``path`` absolute with its symlinks resolved, as ``os.path.realpath``;
    a path that cannot be resolved (a NUL byte, a name the file system cannot
    encode, a symlink loop) comes back absolute but as written, so that the
    opener (``open_regular``) reports it with the field that named it."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return os.path.abspath(path)


@contextlib.contextmanager
def open_regular(path: str | os.PathLike[str], limit: int) -> Iterator[BinaryIO]:
    """Open ``path`` for binary reading if it is a regular file of at most ``limit``
    bytes; raises ``RefusedFile`` otherwise.

    Checked with stat() before opening (opening a FIFO blocks), then opened
    non-blocking and checked again with fstat(), in case the path was replaced
    in between. The size is the stat() size: a reader that must not read more
    than ``limit`` whatever the file does reads ``limit + 1`` bytes at most
    (``read_bounded``).
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except OSError as exc:  # missing, no permission, a symlink loop (ELOOP), EIO
        raise RefusedFile(UNREADABLE, exc.strerror or type(exc).__name__) from None
    except ValueError:  # a NUL byte, or a name the file system's encoding cannot take
        raise RefusedFile(UNREADABLE, BAD_NAME) from None
    if not stat.S_ISREG(st.st_mode):
        raise RefusedFile(IRREGULAR, file_kind(st.st_mode))
    if st.st_size > limit:
        raise RefusedFile(TOO_LARGE, f"{st.st_size:,} bytes")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        raise RefusedFile(UNREADABLE, exc.strerror or type(exc).__name__) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(f.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise RefusedFile(IRREGULAR, file_kind(mode))
        yield f


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (checked
    with stat() and again while reading, so a file that grows, or one whose
    stat() size is 0 such as /proc's, still reads at most ``limit`` + 1 bytes);
    raises ``RefusedFile`` otherwise."""
    with open_regular(path, limit) as f:
        try:
            raw = f.read(limit + 1)
        except OSError as exc:
            raise RefusedFile(UNREADABLE, exc.strerror or type(exc).__name__) from None
    if len(raw) > limit:
        raise RefusedFile(TOO_LARGE, "more (it grew while read)")
    return raw
