"""The ``events:`` section: what is done to the server at given times
(``ScenarioEvent``: ``bgsave``, ``populate``, ``del``, ``unlink``, ``flushall``,
``config-set``, …, run by ``model/admin.py``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import PrivateAttr, ValidationError, model_validator

from redsim.config.errors import BadValue, show
from redsim.config.schema.server import RUNTIME_SETTABLE, Server, _directive
from redsim.config.schema.types import (
    Bytes,
    DelPattern,
    EventAction,
    FlushMode,
    Seconds,
    _literal,
    _Model,
    _v,
)
from redsim.config.units import parse_float, parse_int


class ScenarioEvent(_Model):
    """Something done to the server at a given time: ``{at: 30s, do: bgsave}``,
    ``{at: 0s, do: populate, keys: 100000, value-size: 1kb}``,
    ``{at: 10s, do: del, pattern: odd}``, ``{at: 20s, do: unlink, key: big:hash}``,
    ``{at: 30s, do: flushall, mode: async}`` (``model/admin.py``)."""

    at: Seconds
    do: Annotated[EventAction, _literal(EventAction)]
    """bgsave, bgrewriteaof, populate (DEBUG POPULATE keys key value-size: keys
    ``key:0`` .. ``key:<keys-1>``), del (DEL of the keys a pattern picks, or of one
    of ``big-keys`` by its ``key``), unlink (UNLINK of a big key), flushall
    (FLUSHALL, with ``mode``), memory-purge, or config-set (CONFIG SET of the
    directives under ``config``); run as the command would be."""
    keys: Annotated[int, _v(parse_int, minimum=1)] | None = None
    """populate: how many keys (``key:0`` .. ``key:<keys-1>``; existing ones are kept)."""
    value_size: Bytes | None = None
    """populate: each value's size, bytes (at least ``value:<i>``'s length, as DEBUG
    POPULATE pads)."""
    pattern: Annotated[DelPattern, _literal(DelPattern)] | None = None
    """del: which keys, in ascending order of their number: odd, even, every (each
    ``every``-th, from 0), first (the lowest-numbered ``fraction`` of them: whole
    slabs empty) or random (each with probability ``fraction``)."""
    every: Annotated[int, _v(parse_int, minimum=1)] | None = None
    """del with pattern every: k, the step."""
    fraction: Annotated[float, _v(parse_float, minimum=0, maximum=1)] | None = None
    """del with pattern random: each key's probability of deletion; with first: the
    share of the keys deleted."""
    key: str | None = None
    """del or unlink: the name of one of the scenario's ``big-keys``."""
    group: str | None = None
    """del: a client group whose key ids (number i = key id i) the pattern picks from;
    by default the populated keys (``key:<i>`` is number i)."""
    mode: Annotated[FlushMode, _literal(FlushMode)] | None = None
    """flushall: ``async`` (FLUSHALL ASYNC: the bio lazy-free thread frees the keys
    while the main thread goes on) or ``sync`` (FLUSHALL SYNC: the main thread frees
    them all before anything else runs); by default, as ``lazyfree-lazy-user-flush``
    says."""
    config: dict[str, Any] | None = None
    """config-set: the directives to set and their values, as under ``server:``
    (``{activedefrag: yes}``); those marked settable during a run under
    ``server`` can be set (their declarations name a kernel scalar). They apply
    from the event's time on, between two event-loop iterations."""

    _settings: tuple[tuple[str, int], ...] = PrivateAttr(default=())

    @property
    def settings(self) -> tuple[tuple[str, int], ...]:
        """config-set: what its ``CONFIG SET`` writes, in ``config``'s order: the
        kernel's ``I`` scalar each directive declares (``RUNTIME_SETTABLE``) and
        the value parsed as under ``server:`` (a boolean as 1 or 0). The kernel
        writes them as they are (``model/admin.py``); empty for other events."""
        return self._settings

    @model_validator(mode="after")
    def _check(self) -> ScenarioEvent:
        need: dict[str, tuple[str, ...]] = {
            "populate": ("keys", "value_size"), "unlink": ("key",), "config-set": ("config",)}
        for name in need.get(self.do, ()):
            if getattr(self, name) is None:
                raise BadValue(f"a {name.replace('_', '-')} for do: {self.do}", "none",
                               field=(name.replace("_", "-"),))
        allowed = {"populate": {"keys", "value_size"},
                   "del": {"pattern", "every", "fraction", "group", "key"},
                   "unlink": {"key"}, "config-set": {"config"},
                   "flushall": {"mode"}}.get(self.do, set())
        for name in ("keys", "value_size", "pattern", "every", "fraction", "group", "key",
                     "config", "mode"):
            if getattr(self, name) is not None and name not in allowed:
                raise BadValue(f"no {name.replace('_', '-')} with do: {self.do}",
                               repr(getattr(self, name)), field=(name.replace("_", "-"),))
        if self.config is not None:
            if not self.config:
                raise BadValue("at least one directive to set", "none", field=("config",))
            settings: list[tuple[str, int]] = []
            for key, value in self.config.items():
                name = _directive(key)
                if name not in RUNTIME_SETTABLE:
                    raise BadValue("a directive config-set can change: "
                                   + ", ".join(sorted(RUNTIME_SETTABLE)), show(key),
                                   field=("config", str(key)))
                try:
                    server = Server.model_validate({name: value})
                except ValidationError as e:
                    err = e.errors()[0]
                    cause = err.get("ctx", {}).get("error")
                    expected = cause.expected if isinstance(cause, BadValue) else err["msg"]
                    raise BadValue(expected, show(value), field=("config", str(key))) from None
                parsed = getattr(server, name.replace("-", "_"))
                settings.append((RUNTIME_SETTABLE[name], int(parsed)))
            self._settings = tuple(settings)
        if self.do == "del":
            if (self.pattern is None) == (self.key is None):
                raise BadValue("either a pattern (the keys it picks) or a key (a big key's "
                               "name) for do: del", "both" if self.key else "neither",
                               field=("pattern",))
            if self.key is not None and (self.group or self.every or self.fraction):
                raise BadValue("no group, every or fraction with a key", "one of them",
                               field=("key",))
            if self.pattern == "every" and self.every is None:
                raise BadValue("every: k for pattern every", "none", field=("every",))
            if self.pattern in ("random", "first") and self.fraction is None:
                raise BadValue(f"fraction: f for pattern {self.pattern}", "none",
                               field=("fraction",))
        return self
