"""What the main thread's socket calls move through the host's network stack.

No Redis source: Linux's TCP receive and transmit paths. Each ``read()`` of a
query consumes the segments its bytes came in, each reply ``write()``/``writev``
sends its bytes as segments; the kernel counts both here, and the host
(``redsim/host/network.py``) charges their interrupt and softirq cost to the
host's cores, not to Redis's thread (the syscalls' own cost is in the
read/write costs the main thread pays).

Simplification: the segments of a read are its bytes over the MSS, at least
one; a client's requests that arrived in several segments and are read at
once count as one segment per MSS of bytes (a pipelined batch is usually one
send, hence one segment per MSS). ACKs are not counted (delayed ACKs ride on
the replies at these rates).
"""

from __future__ import annotations

from redsim.model.jit import leaf
from redsim.model.state import NET_RX_SEGS, NET_TX_SEGS

FIELDS = (
    ("I", "NET_RX_SEGS", "i8", "-", "counter",
     "TCP segments of queries the main thread has read since the start"),
    ("I", "NET_TX_SEGS", "i8", "-", "counter",
     "TCP segments of replies the main thread has sent since the start"),
)

TCP_MSS = 1448
"""Payload bytes per segment on Ethernet with TCP timestamps (1500 - 20 - 20 - 12)."""


@leaf
def received(w, nbytes):
    """A ``read()`` took ``nbytes`` of queries off a socket."""
    if nbytes > 0:
        w.I[NET_RX_SEGS] += 1 + (nbytes - 1) // TCP_MSS


@leaf
def sent(w, nbytes, calls):
    """``calls`` write()s sent ``nbytes`` of replies (each call at least a segment)."""
    if nbytes > 0:
        w.I[NET_TX_SEGS] += max(calls, 1 + (nbytes - 1) // TCP_MSS)
