"""``propagate()``: a change goes to the AOF and to the replicas.

Follows ``src/server.c:propagateNow`` (``feedAppendOnlyFile`` then
``replicationFeedSlaves``) and ``src/db.c:propagateDeletion`` (the ``DEL``,
or ``UNLINK``, of a key evicted or expired). Each sink decides for itself
whether it is on: the AOF when ``appendonly yes`` (``aof.feed``), the
stream while a replication backlog exists (``replication_buffer.feed``).

Deviation: a deletion's bytes are those of ``DEL`` with the first client
group's key length, for ``UNLINK`` too (two bytes fewer than Redis's).
"""

from __future__ import annotations

from redsim.model import aof, replication_buffer
from redsim.model.jit import leaf
from redsim.model.protocol import digits
from redsim.model.state import KEY_LEN


@leaf
def propagate(w, nbytes):
    """A write command's ``nbytes`` of RESP, as it was sent, to every sink."""
    aof.feed(w, nbytes)
    replication_buffer.feed(w, nbytes)


@leaf
def propagate_del(w):
    """``propagateDeletion``: the ``DEL key`` of an eviction, an expiry or an
    admin delete, to every sink."""
    k = w.I[KEY_LEN]
    nbytes = 4 + 9 + 1 + digits(k) + 2 + k + 2  # *2 $3 DEL $k key
    aof.feed(w, nbytes)
    replication_buffer.feed(w, nbytes)
