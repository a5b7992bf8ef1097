"""Scenario builders shared by the engine tests."""

from __future__ import annotations

import contextlib
import sys

ZERO_OVERHEAD = {
    "iteration": 0, "wakeup": 0, "read": 0, "read-per-byte": 0, "write": 0, "write-per-byte": 0,
    "accept": 0, "close": 0, "cron": 0, "clients-cron-per-client": 0,
    # No cache misses past the costs given: the queues worked by hand cost what they say.
    "miss": "none",
}


def single_server(service_us: float, dist: str, *, batching: bool = False,
                  extra_cpu: dict | None = None) -> dict:
    """Server settings that make redsim a plain single-server queue: no per-syscall
    or per-iteration overhead, no network delay, one command per request, each
    costing ``service_us`` (fixed or exponential)."""
    cpu = dict(ZERO_OVERHEAD)
    cpu.update(extra_cpu or {})
    cpu["distribution"] = dist
    cpu["commands"] = {"GET": {"fixed": f"{service_us}us", "per-byte": 0}}
    return {"engine": {"reply-batching": batching, "cpu": cpu}, "network": {"rtt": 0}}


def open_mm1(lam: float, service_us: float, dist: str, duration: float, seed: int) -> dict:
    """Poisson arrivals at ``lam``/s, each on its own pooled connection."""
    sc = single_server(service_us, dist)
    sc.update({
        "name": f"open-{dist}-{lam:g}", "duration": duration, "warmup": 10.0, "seed": seed,
        "sample-interval": 10.0,
        "server": {"maxclients": 10000},
        "clients": [{"kind": "open", "rate": lam, "processes": 1,
                     "pool": {"max-size": 10000}, "mix": {"GET": 1}}],
    })
    return sc


def closed_mva(n: int, think_s: float, service_us: float, duration: float, seed: int,
               one_process: bool = False) -> dict:
    """n closed-loop sources with exponential think, one connection each: n
    processes of one thread, or (``one_process``) one process of n threads
    with a pool of n connections."""
    procs, threads = (1, n) if one_process else (n, 1)
    sc = single_server(service_us, "exponential")
    sc.update({
        "name": f"closed-{n}", "duration": duration, "warmup": 10.0, "seed": seed,
        "sample-interval": 10.0,
        "clients": [{"kind": "closed", "processes": procs, "threads": threads,
                     "think": {"distribution": "exponential", "mean": think_s},
                     "pool": {"max-size": threads}, "mix": {"GET": 1}}],
    })
    return sc


def tiny_world(scenario: dict, seed: int = 1):
    """A kernel world built from a few scenario fields (a dict; ``duration`` 1 s
    unless given), for calling one kernel function on it from a test, as the
    kernel would: returns (world, random streams). Every two-dimensional array
    (the recorded series, the delay lines, the random-number buffer) is the flat
    view the kernel indexes (``row * n_columns + column``; stream s at s x size,
    so a test's ``streams.refill()`` reaches it)."""
    from redsim import load_scenario
    from redsim.model.build import build_world

    w, streams, _ = build_world(load_scenario({"duration": 1, **scenario}), seed)
    return w._replace(**{f: a.reshape(-1) for f, a in w._asdict().items() if a.ndim > 1}), streams


def changed(base: dict, **changes) -> dict:
    """``base`` with top-level keys replaced; a mapping given for a mapping key
    updates that section (``server={"io-threads": 4}`` keeps the other keys)."""
    d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(d.get(key), dict):
            d[key] = {**d[key], **value}
        else:
            d[key] = value
    return d


@contextlib.contextmanager
def interpreted():
    """Inside: every compiled kernel function runs as its Python source, as under
    ``NUMBA_DISABLE_JIT=1``, so a test can call one step on a ``tiny_world``.

    Called compiled, a step given a ``World`` of arrays (not the ``WorldPtr``
    the kernel passes) is compiled anew for that type with everything it
    calls: ``perform_evictions`` alone took over 10 minutes and 12 GB in a
    cold cache, most of what made the suite slow on a fresh machine. Each
    kernel module's compiled functions (and ``prefetch``, which only compiles)
    are swapped for their Python versions until the block ends; the entry
    points, which take the ``pack``-ed ``world`` (building a world calls
    them), stay compiled.
    """
    import inspect

    from numba.core.dispatcher import Dispatcher

    from redsim.model import world

    python = {id(world._prefetch): world._no_prefetch}
    swapped = []
    for name, module in list(sys.modules.items()):
        if not name.startswith(("redsim.model", "redsim.observe")) or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if isinstance(value, Dispatcher) and \
                    next(iter(inspect.signature(value.py_func).parameters), "") != "world":
                swapped.append((module, attr, value))
                setattr(module, attr, value.py_func)
            elif id(value) in python:
                swapped.append((module, attr, value))
                setattr(module, attr, python[id(value)])
    try:
        yield
    finally:
        for module, attr, value in swapped:
            setattr(module, attr, value)


MISS_COSTS_OF_ANOTHER_HOST = (
    "issue #43: the cache-miss costs are the 2-vCPU Intel VM's (a VM's two-level page "
    "walks), charged here to 3 M keys on a published 64-core host whose misses cost "
    "less: Valkey 7.2 (no prefetch) models 215K SET/s against c7g.16xlarge's 360K "
    "(-40 %; 309K, -14 %, without misses). Redis 8 (prefetching 16 keys, 10 misses in "
    "flight) models 1.32M against PR #13665's 1.16M (+14 %, within 20 % since the "
    "defaults became the Intel VM's). The published hosts' own miss costs "
    "(redsim calibrate on them) would decide it")
"""Why the published 64-core throughputs at 3 M keys are missed (closing note of #43)."""
