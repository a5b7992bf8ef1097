"""The bytes of an RDB file of the keys present: what a BGSAVE or AOF-rewrite
child writes (``fork.py``) and what the AOF the server started from holds as
its base (``aof.start``).

Follows ``src/rdb.c:rdbSaveKeyValuePair`` (an expire opcode and its 8-byte ms
time for a key with a TTL, the type byte, the key and the value with their
length prefixes) over the keys of ``src/rdb.c:rdbSaveRio``, plus its header
and checksum. A collection's value bytes are its own (``encoding.rdb_bytes``,
in the collections' table); an integer value's encoding is counted at its
most.

Here, below both ``fork.py`` and ``aof.py``, so that the AOF's start need not
import the fork that imports the AOF.
"""

from __future__ import annotations

from redsim.model.jit import entry, step
from redsim.model.objects import collection_of, is_collection
from redsim.model.state import KEY_LEN, KS_KEYS
from redsim.model.world import as_world

RDB_KEY_OVERHEAD = 3  # type byte and two length prefixes per string key (rdbSaveKeyValuePair)
RDB_EXPIRE_BYTES = 9  # RDB_OPCODE_EXPIRETIME_MS + 8-byte ms
RDB_INT_BYTES = 5  # an integer value's encoding, at most


@step
def rdb_bytes(w):
    """Bytes the child writes: Σ over keys of key, value and RDB framing."""
    total = 0
    klen = w.I[KEY_LEN]
    for i in range(w.I[KS_KEYS]):
        k = w.ks_dense[i]
        v = w.ks_vlen[k]
        if v >= 0:
            total += RDB_KEY_OVERHEAD + klen + v
        elif is_collection(v):
            total += RDB_KEY_OVERHEAD + klen + w.cl_rdb[collection_of(v)]
        else:
            total += RDB_KEY_OVERHEAD + klen + RDB_INT_BYTES
        if w.ks_xpos[k] >= 0:
            total += RDB_EXPIRE_BYTES
    return total + 18  # header and checksum


@entry
def dataset_rdb_bytes(world):
    """``rdb_bytes`` from Python, on a packed world (``world.pack``): the RDB the
    keys present now would make (the AOF's base at preload, ``aof.start``)."""
    return rdb_bytes(as_world(world))
