"""The ``big-keys:`` section: collections in the dataset from the start
(``BigKey``), which ``del`` and ``unlink`` events delete by name.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from pydantic import model_validator

from redsim.config.errors import BadValue, show
from redsim.config.schema.types import Bool, CollectionType, _literal, _Model, _optional, _v
from redsim.config.units import parse_int


def _big_key_name(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise BadValue("a key name (a non-empty string)", show(v))
    return v


class BigKey(_Model):
    """A collection in the dataset from the start: ``{name: big:hash, type: hash,
    elements: 1M, member-size: 10, value-size: 20}`` (``model/bigkeys.py``). Its
    encoding, bytes and free cost follow from the elements and the server's
    ``*-max-listpack-*`` thresholds (``model/encoding.py``)."""

    name: Annotated[str, _v(_big_key_name)]
    """The key's name (what ``del`` and ``unlink`` events call it)."""
    type: Annotated[CollectionType, _literal(CollectionType)]
    """hash, set, zset (sorted set) or list."""
    elements: Annotated[int, _v(parse_int, minimum=1, maximum=1 << 32)]
    """Fields (hash), members (set, zset) or elements (list)."""
    member_size: Annotated[int, _v(parse_int, minimum=1, maximum=1 << 20)] = 10
    """Bytes of each hash field, set or sorted-set member, or list element."""
    value_size: Annotated[int | None, _v(_optional(partial(parse_int, minimum=0,
                                                           maximum=1 << 20)))] = None
    """hash: bytes of each field's value (default 20)."""
    integers: Bool = False
    """set: its members are integers (an intset while few enough)."""

    @model_validator(mode="after")
    def _check(self) -> BigKey:
        if self.value_size is not None and self.type != "hash":
            raise BadValue("no value-size but for a hash (its fields' values)",
                           show(self.value_size), field=("value-size",))
        if self.integers and self.type != "set":
            raise BadValue("integers only for a set", "yes", field=("integers",))
        return self
