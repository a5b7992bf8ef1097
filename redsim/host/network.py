"""The kernel's network work: interrupts and softirq per packet, on the host's cores.

No Redis source: Linux's receive path (NIC interrupt, NAPI poll in the
NET_RX softirq, IP and TCP input, waking the reader) and transmit completion
(the NET_TX softirq freeing sent buffers). The work runs in interrupt context
on whichever core the NIC queue's interrupt is routed to, ahead of any thread,
so it takes cores away from the threads (``scheduler.py``) rather than time
from Redis's own thread; the system calls' share (``read``/``write`` and the
TCP output path) is in the main thread's own read and write costs.

Cost per window of ``dt`` s with ``rx`` segments received and ``tx`` sent:

    cpu = rx * per_rx + tx * per_tx + interrupts * per_interrupt

Interrupt moderation batches packets: a queue fires an interrupt for the
first packet after its quiet period (``coalesce``, ethtool's ``rx-usecs``),
then NAPI polls everything that came meanwhile. With packets arriving at rate
λ per queue as a Poisson stream, each interrupt cycle is the coalescing delay
plus the wait for the next packet, so a queue takes λ / (1 + λ·coalesce)
interrupts per second: one per packet at low load, 1/coalesce per second at
high load. That is the "batching at the network layer" seed S4 sees as
instances (and packets) grow. Packets are spread evenly over ``queues``
(RSS hashing of many connections).

Simplification: the receive and transmit segments share one interrupt stream
per queue (a combined rx/tx interrupt, as virtio-net and most NICs' default);
softirq work spreads over the cores evenly (RSS with as many queues as cores).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NetworkCosts:
    """The host's per-packet CPU costs, seconds (``host.network`` in a scenario)."""

    per_rx: float
    """Softirq CPU per segment received (NAPI poll, IP/TCP input, wake-up), s."""
    per_tx: float
    """Softirq CPU per segment sent (transmit completion), s."""
    per_interrupt: float
    """CPU per hardware interrupt (entry, handler, exit; a VM exit on a guest), s."""
    coalesce: float
    """Interrupt moderation delay per queue, s (0: one interrupt per packet)."""
    queues: int
    """NIC queues the packets are spread over."""

    @classmethod
    def from_scenario(cls, host) -> NetworkCosts:
        net = host.network
        queues = net.queues or (host.cores or 1)
        return cls(per_rx=net.per_rx * 1e-6, per_tx=net.per_tx * 1e-6,
                   per_interrupt=net.per_interrupt * 1e-6, coalesce=net.coalesce * 1e-6,
                   queues=int(queues))

    def interrupts(self, packets: float, dt: float) -> float:
        """Interrupts taken for ``packets`` packets in ``dt`` s (moderated per queue)."""
        if packets <= 0 or dt <= 0:
            return 0.0
        lam = packets / dt / self.queues  # packets per second per queue
        return packets / (1.0 + lam * self.coalesce)

    def cpu(self, rx: float, tx: float, dt: float) -> tuple[float, float]:
        """``(softirq, irq)`` CPU seconds the host spends on ``rx`` and ``tx``
        segments in ``dt`` s."""
        return rx * self.per_rx + tx * self.per_tx, \
            self.interrupts(rx + tx, dt) * self.per_interrupt
