"""A shared start (``model/keyspace_image.py``): a run whose keyspace is copied
from another run's image is the run that builds its own, array for array and
figure for figure.

The base scenario exercises what the preload places: TTLs (the expires dict),
write-once keys up to a preload limit, maxmemory with LRU eviction once the
run writes, and BGSAVE (fork's copy-on-write bitmap spans the key table).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from redsim import load_scenario
from redsim.config.loader import keyspace_hash
from redsim.model import keyspace_image
from redsim.model import state as S
from redsim.model.build import build_world
from redsim.model.keyspace_image import KeyspaceImages
from redsim.simulation import Simulation

BASE = {
    "name": "shared-start", "duration": 6.0, "seed": 11, "sample-interval": 0.5,
    "server": {"maxmemory": "12mb", "maxmemory-policy": "allkeys-lru", "save": "",
               "hz": 10},
    "events": [{"at": 2.0, "do": "bgsave"}],
    "network": {"rtt": "200us"},
    "clients": [{"kind": "open", "rate": 4000, "processes": 2, "pool": {"max-size": 4},
                 "mix": [{"command": "SET", "weight": 1, "ttl": "30s"},
                         {"command": "GET", "weight": 2}],
                 "key-size": 24, "value-size": {"distribution": "exponential", "mean": 300},
                 "keyspace": {"keys": 20_000, "preload": 1.0, "write-once": 0.3,
                              "history": 600, "preload-limit": 0.98}}],
}


def _with(changes: dict) -> dict:
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        *head, last = path.split(".")
        node = doc
        for p in head:
            node = node[int(p)] if p.isdigit() else node[p]
        node[last] = value
    return doc


def _worlds_equal(a, b) -> list[str]:
    """The fields in which two worlds differ."""
    return [n for n in a._fields
            if not np.array_equal(getattr(a, n), getattr(b, n), equal_nan=True)]


@pytest.fixture(scope="module")
def images() -> KeyspaceImages:
    """Images kept from BASE's run (pool 4 per process: 8 connections)."""
    imgs = KeyspaceImages()
    sc = load_scenario(BASE)
    build_world(sc, BASE["seed"], imgs, keyspace_hash(sc, BASE["seed"]))
    assert imgs.misses == 1 and len(imgs) == 1
    return imgs


# Fields a sweep varies that leave the keyspace alone, one value each side
# of the base's where it has an order: fewer connections than the image's
# build (its slab and row spares are then larger than this run's own) and more.
VARIANTS = [
    {"clients.0.pool": {"max-size": 2}},
    {"clients.0.pool": {"max-size": 40}},
    {"engine": {"cpu": {"read": "9us", "commands": {"SET": {"fixed": "40us"}}}}},
    {"network.rtt": "2ms"},
    {"server.hz": 50},
]


@pytest.mark.parametrize("changes", VARIANTS, ids=lambda c: next(iter(c)))
def test_a_shared_start_is_the_world_a_fresh_build_makes(images, changes):
    sc = load_scenario(_with(changes))
    key = keyspace_hash(sc, BASE["seed"])
    assert key == next(iter(images._images))
    hits = images.hits
    shared = build_world(sc, BASE["seed"], images, key)[0]
    fresh = build_world(sc, BASE["seed"])[0]
    if len(fresh.sb_bin) < len(images.get(key).arrays["sb_bin"]):
        # Fewer connections than the image's build: fewer spare slab ids than
        # the image holds, so the run builds afresh rather than run with more.
        assert images.hits == hits
    else:
        assert images.hits == hits + 1
    assert _worlds_equal(shared, fresh) == []


@pytest.mark.parametrize("changes", VARIANTS, ids=lambda c: next(iter(c)))
def test_a_shared_start_runs_byte_identically(images, changes):
    doc = _with(changes)
    shared = Simulation(load_scenario(doc), progress=False, keyspace_images=images).run()
    fresh = Simulation(load_scenario(doc), progress=False).run()
    assert shared.summary["evicted_keys"] > 0  # the run evicts: LRU clocks matter
    assert shared.summary == fresh.summary
    assert shared.timeseries.equals(fresh.timeseries)


@pytest.mark.parametrize("changes", [
    {"clients.0.keyspace": {**BASE["clients"][0]["keyspace"], "write-once": 0.2}},
    {"clients.0.mix": [{"command": "SET", "weight": 1, "ttl": "60s"},
                       {"command": "GET", "weight": 2}]},
    {"server.maxmemory": "16mb"},
    {"server.maxmemory-policy": "allkeys-lfu"},
    {"clients.0.rate": 8000},  # the preload's ages follow the nominal rate
])
def test_fields_that_shape_the_keyspace_change_the_key(changes):
    assert keyspace_hash(load_scenario(_with(changes)), 1) != \
        keyspace_hash(load_scenario(BASE), 1)
    assert keyspace_hash(load_scenario(BASE), 2) != keyspace_hash(load_scenario(BASE), 1)


def test_a_world_not_in_the_images_state_builds_afresh(images):
    # The guard: where the image changed a scalar, the run's value before the
    # preload must be the image's; here one is made to differ.
    sc = load_scenario(BASE)
    key = keyspace_hash(sc, BASE["seed"])
    img = images.get(key)
    idx, before, after = img.scalars["I"]
    assert len(idx) > 0
    mine = copy.copy(img)
    mine.scalars = {**img.scalars, "I": (idx, before + 1, after)}
    w = build_world(sc, BASE["seed"])[0]
    assert not keyspace_image.fits(mine, w)
    other = KeyspaceImages()
    other.put(mine)
    shared = build_world(sc, BASE["seed"], other, key)[0]
    assert other.hits == 0 and other.misses == 1
    assert _worlds_equal(shared, w) == []
    assert int(shared.I[S.KS_FREE_N]) > 0


def _pool_sweep(shared: bool, out) -> tuple:
    from redsim.sweep import load_sweep, run_sweep

    spec = load_sweep({"name": "pools", "base": {**BASE, "duration": 3.0}, "replications": 1,
                       "axes": [{"name": "pool", "path": "clients[0].pool.max-size",
                                 "values": [8, 2, 4]},
                                {"name": "ttl", "path": "clients[0].mix[0].ttl",
                                 "values": ["30s", "60s"]}]})
    res = run_sweep(spec, out, jobs=1, progress=False, shared_start=shared)
    import pandas as pd

    return res.runs, pd.read_csv(out / "timings.csv")


def test_a_sweep_starts_the_points_of_one_keyspace_from_one_build(tmp_path):
    # Pool sizes 8, 2, 4 at two TTLs: two keyspaces of three points each. The
    # runs go by keyspace, fewest connections first (pool 2, then 4 and 8 from
    # its image): 2 builds and 4 shared starts, and the same tables as a sweep
    # that builds every point's keyspace.
    runs, timings = _pool_sweep(True, tmp_path / "shared")
    fresh_runs, fresh_timings = _pool_sweep(False, tmp_path / "fresh")
    assert int(timings["shared_start"].sum()) == 4
    assert not fresh_timings["shared_start"].any()
    assert runs.equals(fresh_runs)
    assert (tmp_path / "shared" / "runs.csv").read_bytes() == \
        (tmp_path / "fresh" / "runs.csv").read_bytes()
