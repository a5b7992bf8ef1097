"""``instances: N``: one scenario split into N Redis instances on one host.

No Redis source: seed S4's partitioning (``../shared/seeds/004_*``, "Multiple
Redis Instances"): each of N instances gets ``maxmemory / N``, a keyspace of
``keys / N`` and its share of the load, so the host's total load stays the
same as N grows. The seed's memtier runs give each instance ``round(16 / N)``
connections per client machine and average the floor and ceiling cases; here
the whole numbers are dealt out instead (the first ``P mod N`` instances get
one process more), so the total is exactly the scenario's at every N.

What is split, per client group: ``processes`` (each process is a connection
pool, a memtier connection), an open group's ``rate`` (and profile),
``keyspace.keys``; and ``server.maxmemory``, ``server.maxmemory-clients``.
Everything else (the server's other directives, costs, events) is every
instance's. Each instance draws its own random streams (``instance_seed``).

``instances: [...]`` lists the instances instead, each with its own name,
``server:`` keys (over the scenario's) and clients; nothing is split.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def deal(total: int, n: int, i: int) -> int:
    """Instance i's share of ``total`` whole things dealt to ``n`` instances."""
    return total // n + (1 if i < total % n else 0)


def instance_seed(seed: int, i: int) -> int:
    """Instance i's root seed: a SeedSequence child of the run's seed, so
    instances draw independent streams and instance 0 does not repeat a
    single-instance run of the same seed."""
    return int(np.random.SeedSequence([int(seed), i]).generate_state(1, np.uint32)[0])


def split(scenario: Any) -> list[Any]:
    """The scenarios of ``scenario``'s instances, each validated, with
    ``instances: 1``: for ``instances: N`` its even split, named ``<name>/i<k>``;
    for a list, one per entry (``Scenario.listed_instances``)."""
    if isinstance(scenario.instances, list):
        return scenario.listed_instances()
    n = int(scenario.instances)
    out = []
    for i in range(n):
        server = scenario.server.model_copy(update={
            "maxmemory": scenario.server.maxmemory // n,
            "maxmemory_clients": scenario.server.maxmemory_clients // n})
        groups = []
        for g in scenario.clients:
            ks = g.keyspace.model_copy(update={"keys": max(1, deal(g.keyspace.keys, n, i))})
            upd: dict[str, Any] = {"keyspace": ks}
            if g.kind == "open":
                if g.rate is not None:
                    upd["rate"] = g.rate / n
                if g.profile is not None:
                    upd["profile"] = [p.model_copy(update={"rate": p.rate / n})
                                      for p in g.profile]
            else:
                upd["processes"] = deal(g.processes, n, i)
            groups.append(g.model_copy(update=upd))
        out.append(scenario.model_copy(update={
            "name": f"{scenario.name}/i{i}", "instances": 1, "server": server,
            "clients": groups}))
    return out
