"""Turn a validated scenario into the kernel's flat arrays (a ``World``).

No Redis source: the wiring from a validated scenario to the kernel's arrays.
Each mechanism configures its own part: its ``configure(b)`` reads its part of
the scenario and fills its scalars and arrays in a ``blueprint.Blueprint``
(each names the directives it reads and the Redis code it follows). ``STEPS``
runs them in the order the registry ranks them (``model/mechanisms.py``: a
step may use sizes an earlier one decided); the arrays are then laid out
(``state.flatten``) and ``START`` places what needs the laid-out world (the
preloaded keys, the AOF's base).

Adding a directive that changes a mechanism: the schema field with its
declaration (``config/schema/server.py``, ``config/declare.py``), and the
mechanism's own module: a ``FIELDS`` entry if the kernel needs a new number
(``model/layout.py``), its ``configure`` and its kernel code. A new mechanism
module is registered once, in ``model/mechanisms.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from redsim.model import state as S
from redsim.model.blueprint import Blueprint
from redsim.model.mechanisms import Mechanism, starts, steps
from redsim.model.rng import RandomStreams
from redsim.model.trace import Trace

STEPS: tuple[tuple[Mechanism, Callable[[Blueprint], None]], ...] = tuple(
    (m, importlib.import_module(f"redsim.{m.module}").configure) for m in steps())
"""Every mechanism's configure step, with its registry entry, in the order they run."""

START: tuple[tuple[Mechanism, Callable[[S.World, Blueprint], None]], ...] = tuple(
    (m, importlib.import_module(f"redsim.{m.module}").start) for m in starts())
"""Steps that need the laid-out world, in order: Redis's own allocations, the
allocator's metadata base, the preload, then the AOF's base."""


def build_world(scenario, seed: int, images=None, key: str = "",
                traces: Sequence[Trace | None] | None = None,
                ) -> tuple[S.World, RandomStreams, dict]:
    """Allocate and fill every array for one run.

    ``traces``: each client group's parsed trace, None for a group that
    replays none (``redsim.traces.group_traces``, which the driver calls: the
    kernel imports nothing of ``redsim.traces``); None: no group replays one.

    ``images``: a ``keyspace_image.KeyspaceImages``; the keyspace is copied
    from its image under ``key`` if it has one, else built and an image of it
    kept there under ``key``: the scenario's ``config.loader.keyspace_hash``
    for this seed, which the driver computes (``kernel.Kernel``).

    Returns the world, the random streams that feed it, and a small dict of
    sizes the driver needs (windows, groups' names).
    """
    b = Blueprint(scenario, seed, traces)
    if images is not None:
        if not key:
            raise ValueError("build_world: images without the keyspace's key")
        b.extra.update(keyspace_images=images, keyspace_key=key,
                       keyspace_image=images.get(key))
    for mechanism, configure in STEPS:
        with b.running(mechanism):
            configure(b)
    b.fill("tb", **b.empirical_tables())
    w = S.flatten(*b.vectors(), **b.extra["lists"], **b.parts())
    assert w.F is b.F.values and w.I is b.I.values  # a start step writes through b.F, b.I
    for mechanism, start in START:
        with b.running(mechanism):
            start(w, b)
    b.finish()
    return w, b.extra["streams"], {"n_windows": b.info["n_windows"],
                                   "groups": b.info["groups"]}
