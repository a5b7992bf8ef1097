"""The host: Redis instances sharing cores with each other, their fork children
and the kernel's network work (issue #19).

- ``scheduler.py``: the cores' division among runnable threads (processor sharing).
- ``network.py``: interrupt and softirq CPU per packet.
- ``instances.py``: ``instances: N``, one scenario split evenly.
- ``simulation.py``: ``HostSimulation``, the instances' kernels driven window by window.
- ``result.py``: ``HostResult``, the host's summary and series and each instance's result.
"""

from __future__ import annotations

__all__ = ["HostSimulation", "HostResult"]


def __getattr__(name: str):
    if name == "HostSimulation":
        from redsim.host.simulation import HostSimulation

        return HostSimulation
    if name == "HostResult":
        from redsim.host.result import HostResult

        return HostResult
    raise AttributeError(f"module 'redsim.host' has no attribute {name!r}")
