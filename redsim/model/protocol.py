"""RESP wire sizes: how many bytes a command and its reply occupy.

Follows the RESP2 that ``src/networking.c:processMultibulkBuffer`` parses and
that ``src/networking.c:addReplyBulk``, ``src/networking.c:addReplyNull``,
``src/networking.c:addReplyLongLong`` and ``src/networking.c:addReplyArrayLen``
write (the same in 6.2, 7.0 and 7.2 for RESP2 clients); ``PROTO_IOBUF_LEN`` and
``PROTO_MBULK_BIG_ARG`` are ``src/server.h``'s.

Redis charges per byte when it reads a query and writes a reply, so the
simulator needs these sizes; they follow the RESP2 encoding
(``*<argc>\\r\\n`` then ``$<len>\\r\\n<arg>\\r\\n`` per argument).

The two limits a query meets (reference §1.3; ``query_buffer_over``,
``bulk_too_long``): a bulk
argument longer than ``proto-max-bulk-len`` is a protocol error
(``processMultibulkBuffer``: "invalid bulk length"; the client is closed after
the error reply), and a query buffer longer than ``client-query-buffer-limit``
after a read closes the client (``src/networking.c:readQueryFromClient``,
``freeClientAsync``).
Deviations: the model closes the client at once in both cases: the error
reply is not sent (the request fails either way: its connection closes under
it), and the async close happens within the read pass rather than at the
next ``beforeSleep`` (at most one iteration earlier). The buffer check takes
the read's size asked for, not the bytes the socket had: at most one 16 KB
read early.
"""

from __future__ import annotations

from redsim.model.commands import (  # noqa: F401 - protocol.PROTO_*: the wire's constants
    INFO_REPLY_BYTES,
    PROTO_IOBUF_LEN,
    PROTO_MBULK_BIG_ARG,
    SCRIPT_ARG_BYTES,
    SHAPE_INFO,
    SHAPE_KEY,
    SHAPE_KEY_ARRAY,
    SHAPE_KEY_FIELD_VALUE,
    SHAPE_KEY_INT,
    SHAPE_KEY_MEMBERS_INT,
    SHAPE_KEY_TTL,
    SHAPE_KEY_VALUE,
    SHAPE_KEYS_INT,
    SHAPE_KEYS_PATTERN,
    SHAPE_MULTI_GET,
    SHAPE_MULTI_SET,
    SHAPE_SCAN,
    SHAPE_SCRIPT,
    SHAPE_SIMPLE,
)
from redsim.model.jit import leaf, step
from redsim.model.state import PROTO_MAX_BULK, QBUF_LIMIT

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "PROTO_MAX_BULK", "i8", "B", "config",
     "server.proto_max_bulk_len: a longer bulk argument is a protocol error"),
    ("I", "QBUF_LIMIT", "i8", "B", "config",
     "server.client_max_querybuf_len (client-query-buffer-limit): a longer query buffer "
     "after a read closes the client"),
)


@leaf
def query_buffer_over(w, buffered, budget):
    """``readQueryFromClient``: the query buffer, after a read of ``budget`` bytes
    onto ``buffered``, is longer than ``client-query-buffer-limit``."""
    return buffered + budget > w.I[QBUF_LIMIT]


@leaf
def bulk_too_long(w, c):
    """``processMultibulkBuffer``: the command connection c starts carries a bulk
    argument longer than ``proto-max-bulk-len``."""
    return w.cn_big_n[c] > 0 and w.cn_big_len[c] - 2 > w.I[PROTO_MAX_BULK]


def configure(b) -> None:
    """``proto-max-bulk-len`` and ``client-query-buffer-limit``, bytes."""
    server = b.scenario.server
    b.I[PROTO_MAX_BULK] = int(server.proto_max_bulk_len)
    b.I[QBUF_LIMIT] = int(server.client_query_buffer_limit)


@step
def digits(n):
    """Decimal digits of a non-negative integer."""
    d = 1
    while n >= 10:
        n //= 10
        d += 1
    return d


@step
def bulk(n):
    """Bytes of a bulk string of n payload bytes: $<n>\\r\\n<payload>\\r\\n."""
    return 1 + digits(n) + 2 + n + 2


@step
def header(m):
    """Bytes of an array header of m elements: *<m>\\r\\n."""
    return 1 + digits(m) + 2


@step
def integer_reply(v):
    return 1 + digits(v) + 2


@step
def request_bytes(shape, namelen, key, value, k, n, ttl):
    """Request size in bytes. key/value: sizes in bytes; k: keys or members;
    n: count argument; ttl: seconds (0 = no EX option)."""
    name = bulk(namelen)
    if shape == SHAPE_KEY or shape == SHAPE_KEY_INT or shape == SHAPE_KEY_ARRAY \
            or shape == SHAPE_KEYS_PATTERN:  # KEYS' pattern: as long as a key
        return header(2) + name + bulk(key)
    if shape == SHAPE_KEY_VALUE:
        b = header(3) + name + bulk(key) + bulk(value)
        if ttl > 0:
            b += bulk(2) + bulk(digits(ttl)) + header(5) - header(3)
        return b
    if shape == SHAPE_KEYS_INT or shape == SHAPE_MULTI_GET:
        return header(1 + k) + name + k * bulk(key)
    if shape == SHAPE_MULTI_SET:
        return header(1 + 2 * k) + name + k * (bulk(key) + bulk(value))
    if shape == SHAPE_KEY_MEMBERS_INT:
        return header(2 + k) + name + bulk(key) + k * bulk(value)
    if shape == SHAPE_SCAN:
        return header(4) + name + bulk(6) + bulk(5) + bulk(digits(n))
    if shape == SHAPE_KEY_FIELD_VALUE:
        return header(4) + name + bulk(key) + bulk(8) + bulk(value)
    if shape == SHAPE_KEY_TTL:
        return header(3) + name + bulk(key) + bulk(digits(ttl))
    if shape == SHAPE_SCRIPT:
        return header(3 + k) + name + bulk(SCRIPT_ARG_BYTES) + bulk(digits(k)) + k * bulk(key)
    return header(1) + name  # SHAPE_SIMPLE, SHAPE_INFO


@step
def big_args(shape, namelen, key, value, k, ttl):
    """Where a request's big bulk arguments (``PROTO_MBULK_BIG_ARG`` bytes or more) lie.

    Only value arguments can be big here (keys are short). Returns
    ``(first, period, n, length)``: the k-th big argument's payload starts
    ``first + k * period`` bytes into the request and, with its CRLF, is
    ``length`` bytes long; ``n`` = 0 when the request has none. Parameters as
    for ``request_bytes``.
    """
    if value < PROTO_MBULK_BIG_ARG:
        return 0, 0, 0, 0
    name = bulk(namelen)
    arg = 1 + digits(value) + 2  # "$<len>\r\n": parsed before the payload is read
    if shape == SHAPE_KEY_VALUE:
        return header(5 if ttl > 0 else 3) + name + bulk(key) + arg, 0, 1, value + 2
    if shape == SHAPE_KEY_FIELD_VALUE:
        return header(4) + name + bulk(key) + bulk(8) + arg, 0, 1, value + 2
    if shape == SHAPE_MULTI_SET:
        return header(1 + 2 * k) + name + bulk(key) + arg, bulk(key) + bulk(value), k, value + 2
    if shape == SHAPE_KEY_MEMBERS_INT:
        return header(2 + k) + name + bulk(key) + arg, bulk(value), k, value + 2
    return 0, 0, 0, 0


@step
def reply_bytes(shape, key, value, k, n):
    """Reply size in bytes for the same parameters as ``request_bytes``."""
    if shape == SHAPE_KEY:
        return bulk(value)
    if shape == SHAPE_KEY_VALUE or shape == SHAPE_MULTI_SET:
        return 5  # +OK\r\n
    if shape == SHAPE_KEYS_INT or shape == SHAPE_KEY_MEMBERS_INT:
        return integer_reply(k)
    if shape == SHAPE_KEY_INT:
        return integer_reply(10000)
    if shape == SHAPE_MULTI_GET:
        return header(k) + k * bulk(value)
    if shape == SHAPE_KEY_ARRAY:
        return header(n) + n * bulk(value)
    if shape == SHAPE_SCAN:
        return header(2) + bulk(6) + header(n) + n * bulk(key)
    if shape == SHAPE_KEYS_PATTERN:
        return header(n) + n * bulk(key)
    if shape == SHAPE_KEY_FIELD_VALUE or shape == SHAPE_KEY_TTL or shape == SHAPE_SCRIPT:
        return integer_reply(1)
    if shape == SHAPE_INFO:
        return bulk(INFO_REPLY_BYTES)
    return 7  # +PONG\r\n (SHAPE_SIMPLE)


@step
def value_bytes_moved(shape, value, k, n):
    """Value bytes the command copies (for the per-byte CPU part)."""
    if shape == SHAPE_KEY or shape == SHAPE_KEY_VALUE or shape == SHAPE_KEY_FIELD_VALUE:
        return value
    if shape == SHAPE_MULTI_GET or shape == SHAPE_MULTI_SET or shape == SHAPE_KEY_MEMBERS_INT:
        return k * value
    if shape == SHAPE_KEY_ARRAY:
        return n * value
    return 0


@step
def elements(shape, k, n):
    """Elements the command touches (for the per-element CPU part)."""
    if shape == SHAPE_KEY_ARRAY or shape == SHAPE_SCAN or shape == SHAPE_KEYS_PATTERN:
        return n
    if (shape == SHAPE_KEYS_INT or shape == SHAPE_MULTI_GET or shape == SHAPE_MULTI_SET
            or shape == SHAPE_KEY_MEMBERS_INT):
        return k
    return 0


__all__ = ["SHAPE_SIMPLE"]
