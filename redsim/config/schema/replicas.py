"""The ``replicas:`` section: the replicas attached to the server, each entry a
link and a replica's speeds (``Replica``, ``model/replication.py``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import model_validator

from redsim.config.errors import BadValue, show
from redsim.config.schema.types import (
    MAX_REPLICAS,
    Bool,
    Seconds,
    _literal,
    _Model,
    _optional,
    _v,
)
from redsim.config.units import parse_bandwidth, parse_int, parse_link_rate, parse_size

ReplicaStart = Literal["online", "full-sync"]


class Replica(_Model):
    """Replicas attached to the server: ``{count: 2, link-bandwidth: 1gbit,
    rtt: 500us, load-rate: 200mb/s}`` (``model/replication.py``). The primary's
    side of replication is simulated: the stream it feeds, its buffers, the
    syncs; a replica is its link, how fast it loads an RDB and applies the stream."""

    count: Annotated[int, _v(parse_int, minimum=1, maximum=MAX_REPLICAS)] = 1
    """Replicas with these settings."""
    link_bandwidth: Annotated[float, _v(parse_link_rate)] = 1.25e9
    """The network path to the replica: bits (``1gbit``) or bytes per second
    (``125mb/s``); default 10gbit."""
    rtt: Seconds = 0.0005
    """Round trip to the replica, s: its reconnect handshake takes 4.5 of them."""
    load_rate: Annotated[float, _v(parse_bandwidth)] = 200.0 * 1024**2
    """How fast the replica loads a full sync's RDB, bytes of RDB per second."""
    apply_rate: Annotated[float | None, _v(_optional(parse_bandwidth))] = None
    """How fast the replica reads and applies the stream, bytes per second; none:
    as fast as the link brings it."""
    socket_buffer: Annotated[int, _v(parse_size, )] = 4 * 1024**2
    """The primary's socket send buffer to the replica, bytes (Linux's
    ``net.ipv4.tcp_wmem`` maximum, which autotuning reaches on a busy link):
    what one write can hand the kernel beyond what the link has taken."""
    start: Annotated[ReplicaStart, _literal(ReplicaStart)] = "online"
    """``online``: in sync when the run starts (the backlog exists, offset 0);
    ``full-sync``: connects at ``connect-at`` with no data and asks for a full sync."""
    connect_at: Seconds = 0.0
    """With ``start: full-sync``, when the replica connects, s."""
    dual_channel: Bool = False
    """A full sync over two connections (Valkey 8's ``dual-channel-replication-enabled``,
    Redis 8's RDB channel): the fork child writes the RDB to its own connection while
    the primary streams the writes since the fork down the replica's main one, and
    the replica buffers them until it has loaded the RDB. The same for every entry."""
    full_sync_buffer_limit: Annotated[int | None, _v(_optional(parse_size))] = None
    """With ``dual-channel``: how much of the stream the replica buffers during a full
    sync before it stops reading (Redis 8's ``replica-full-sync-buffer-limit``), bytes;
    none or 0: the hard limit of ``client-output-buffer-limit replica``, as Valkey 8
    and Redis 8 inherit it."""

    @model_validator(mode="after")
    def _check(self) -> Replica:
        if self.socket_buffer < 16 * 1024:
            raise BadValue("a socket-buffer ≥ 16kb (one write of the stream)",
                           show(self.socket_buffer), field=("socket-buffer",))
        if self.connect_at and self.start != "full-sync":
            raise BadValue("connect-at only with start: full-sync", show(self.connect_at),
                           field=("connect-at",))
        if self.full_sync_buffer_limit and not self.dual_channel:
            raise BadValue("full-sync-buffer-limit only with dual-channel: yes",
                           show(self.full_sync_buffer_limit),
                           field=("full-sync-buffer-limit",))
        return self
