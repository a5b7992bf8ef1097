"""Which driver a scenario needs, and running one: the layer above both drivers.

``Simulation`` (``redsim/simulation.py``) runs one instance with a core to
itself; ``HostSimulation`` (``redsim/host/simulation.py``) runs several
instances, or one on shared cores, on top of it. Choosing between them
(``make_simulation``), running a scenario to its ``Result`` (``simulate``) and
the compile's warm-up run (``warm_up``) sit here, above both, so that neither
driver imports the other's caller (issue #44: ``simulation.py`` and
``host/simulation.py`` imported each other).
"""

from __future__ import annotations

import time
from typing import Any

from redsim.config import load_scenario
from redsim.host.simulation import HostSimulation, uses_host
from redsim.simulation import Simulation

WARM_UP = {
    "name": "warm-up", "duration": 0.5, "warmup": 0.0, "sample-interval": 0.1,
    "server": {"maxmemory": "2mb", "appendonly": "yes", "save": ""},
    "clients": [{"kind": "open", "rate": 2000, "mix": [{"command": "SET", "weight": 1,
                                                         "ttl": "10s"},
                                                        {"command": "GET", "weight": 1}],
                 "keyspace": {"keys": 1000, "write-once": 0.5}}],
}
"""A tiny run that makes numba compile the kernel: eviction, expiry, the AOF and
write-once keys, so that the functions a run calls are in the cache after it."""


def warm_up() -> float:
    """Compile (or load) the kernel by running ``WARM_UP``; returns the wall
    seconds it took (~400 s on the reference 2-vCPU VM when it compiles, a few
    when the cache has it)."""
    t0 = time.perf_counter()
    Simulation(load_scenario(WARM_UP), seed=1, progress=False).run()
    return time.perf_counter() - t0


def simulate(scenario: Any, seed: int | None = None, progress: bool | None = None,
             keyspace_images: Any = None):
    """Run ``scenario`` (a Scenario, a path, or a dict) and return its ``Result``
    (``keyspace_images``: see ``Simulation``)."""
    if not hasattr(scenario, "clients"):
        scenario = load_scenario(scenario)
    return make_simulation(scenario, seed=seed, progress=progress,
                           keyspace_images=keyspace_images).run()


def make_simulation(scenario: Any, seed: int | None = None, progress: bool | None = None,
                    keyspace_images: Any = None):
    """The driver a scenario needs: ``Simulation`` for one instance with cores to
    spare (``run`` gives a ``Result``), ``redsim.host.HostSimulation`` for several
    instances or shared cores (``run`` gives a ``HostResult``; it builds every
    instance's keyspace, ``keyspace_images`` unused)."""
    if uses_host(scenario):
        return HostSimulation(scenario, seed=seed, progress=progress)
    return Simulation(scenario, seed=seed, progress=progress,
                      keyspace_images=keyspace_images)


__all__ = ["WARM_UP", "make_simulation", "simulate", "warm_up"]
