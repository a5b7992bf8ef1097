"""RESP wire sizes: how many bytes a command and its reply occupy.

Follows the RESP2 that ``src/networking.c:processMultibulkBuffer`` parses and
that ``src/networking.c:addReplyBulk``, ``src/networking.c:addReplyNull``,
``src/networking.c:addReplyLongLong`` and ``src/networking.c:addReplyArrayLen``
write (the same in 6.2, 7.0 and 7.2 for RESP2 clients); ``PROTO_IOBUF_LEN`` and
``PROTO_MBULK_BIG_ARG`` are ``src/server.h``'s.

Redis charges per byte when it reads a query and writes a reply, so the
simulator needs these sizes; they follow the RESP2 encoding
(``*<argc>\\r\\n`` then ``$<len>\\r\\n<arg>\\r\\n`` per argument).
"""

from __future__ import annotations

from redsim.model.commands import (  # noqa: F401 - protocol.PROTO_*: the wire's constants
    INFO_REPLY_BYTES,
    PROTO_IOBUF_LEN,
    PROTO_MBULK_BIG_ARG,
    SHAPE_INFO,
    SHAPE_KEY,
    SHAPE_KEY_ARRAY,
    SHAPE_KEY_FIELD_VALUE,
    SHAPE_KEY_INT,
    SHAPE_KEY_MEMBERS_INT,
    SHAPE_KEY_TTL,
    SHAPE_KEY_VALUE,
    SHAPE_KEYS_INT,
    SHAPE_MULTI_GET,
    SHAPE_MULTI_SET,
    SHAPE_SCAN,
    SHAPE_SIMPLE,
)
from redsim.model.jit import step


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
    if shape == SHAPE_KEY or shape == SHAPE_KEY_INT or shape == SHAPE_KEY_ARRAY:
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
    if shape == SHAPE_KEY_FIELD_VALUE or shape == SHAPE_KEY_TTL:
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
    if shape == SHAPE_KEY_ARRAY or shape == SHAPE_SCAN:
        return n
    if (shape == SHAPE_KEYS_INT or shape == SHAPE_MULTI_GET or shape == SHAPE_MULTI_SET
            or shape == SHAPE_KEY_MEMBERS_INT):
        return k
    return 0


__all__ = ["SHAPE_SIMPLE"]
