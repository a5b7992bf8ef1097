"""The miss costs' fit (``redsim/calibrate/misses.py``) on synthetic sweeps whose
answer is known, the sysfs reader, and the sweep's sizes and plan."""

from __future__ import annotations

import pytest

from redsim.calibrate import dataset, misses, plan, replay
from redsim.calibrate.solver import nnls
from redsim.model import cpu_caches as cc

MIB = 1 << 20
L2, LLC, TLB = 2 * MIB, 260 * MIB, 6 * MIB
TRUE = {"l2": 0.05, "tlb": 0.12, "llc": 0.11, "page-walk": 0.17}
BASE = {("GET", 16): 0.6, ("GET", 1): 5.7, ("SET", 16): 0.9, ("SET", 1): 6.0}


def _points(sizes, value_sizes=(3, 256), penalty=TRUE, noise=None):
    """µs per request as the model of misses.py says, from known penalties."""
    h = cc.Hierarchy(L2, LLC, TLB, penalty)
    out = {}
    for i, (n, v, (cmd, pipe)) in enumerate(
            (n, v, k) for v in value_sizes for n in sizes for k in BASE):
        (miss,), _ = cc.miss_cost([cc.touch(cc.KeyAccess(0, n, 1.0), v, replay.KEY_SIZE,
                                            False)], h)
        us = BASE[(cmd, pipe)] + 0.001 * v + miss
        out[(n, v, cmd, pipe)] = us * (1 + (noise[i % len(noise)] if noise else 0.0))
    return out


def test_nnls_solves_a_system_whose_answer_is_known():
    import numpy as np

    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # Unconstrained least squares of b = (1, -1, 0) is (1, -1); with x >= 0 the
    # second is 0 and the first minimises (x-1)^2 + x^2: 0.5.
    assert nnls(a, np.array([1.0, -1.0, 0.0])) == pytest.approx([0.5, 0.0])
    assert nnls(a, np.array([2.0, 3.0, 5.0])) == pytest.approx([2.0, 3.0])


def test_the_fit_recovers_the_penalties_a_sweep_was_made_with():
    pts = _points((10_000, 100_000, 1_000_000, 3_000_000, 10_000_000, 30_000_000))
    fit = misses.fit(pts, L2, LLC, TLB)
    assert fit.uncovered == ()
    for k, v in TRUE.items():
        assert fit.penalty[k] == pytest.approx(v, rel=1e-6)
    assert fit.worst < 1e-9
    # The base of each (command, pipeline, value size): its own part and 0.001 µs/B.
    assert fit.base[("GET", 16, 256)] == pytest.approx(0.6 + 0.256, rel=1e-6)


def test_a_sweep_inside_the_llc_leaves_the_llc_and_page_walk_at_their_defaults():
    # 1 M keys of 3 B are ~200 MB of lines against 260 MiB of LLC: no point
    # misses it with probability >= 0.5, nor the page walk's 1 GiB of span.
    fit = misses.fit(_points((10_000, 100_000, 1_000_000)), L2, LLC, TLB)
    assert set(fit.uncovered) == {"llc", "page-walk"}
    assert set(fit.penalty) == {"l2", "tlb"}


def test_a_sweep_that_does_not_rise_is_refused_with_its_figures():
    flat = _points((10_000, 100_000, 1_000_000, 3_000_000, 10_000_000, 30_000_000),
                   penalty={})
    with pytest.raises(misses.MissFitError, match="does not rise.*10,000 keys 3 B GET P=1"):
        misses.fit(flat, L2, LLC, TLB)


def test_a_sweep_explained_only_by_misses_is_refused():
    pts = {k: v - BASE[(k[2], k[3])] - 0.001 * k[1] for k, v in _points(
        (10_000, 100_000, 1_000_000, 3_000_000, 10_000_000, 30_000_000)).items()}
    with pytest.raises(misses.MissFitError, match="no cost for a request outside its misses"):
        misses.fit(pts, L2, LLC, TLB)


def test_cache_sizes_come_from_sysfs(tmp_path):
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "2048K"), (3, "Unified", "266240K")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert misses.cache_sizes(tmp_path) == {"l2": 2 * MIB, "llc": 260 * MIB}
    assert misses.cache_sizes(tmp_path / "absent") == {}


def test_the_sweep_stops_at_the_memory_it_may_fill():
    # 4 KB values: ~4.3 KB a key with the dict's growth; 100 MiB holds ~24,000
    # keys, so the sweep is 10,000 keys only; 2 GiB holds ~500,000: 10,000,
    # 100,000 and the most that fit.
    assert dataset.sweep_sizes(4096, 100 * MIB) == (10_000,)
    big = dataset.sweep_sizes(4096, 2 << 30)
    assert big[:2] == (10_000, 100_000) and 350_000 < big[2] < 500_000
    assert dataset.sweep_sizes(3, 2 << 30) == dataset.SIZES
    step = plan.caches_step(3, dataset.Sweep(max_bytes=2 << 30))
    assert step.part == "caches" and step.units == len(dataset.VALUE_SIZES)
    assert "10,000,000 keys" in step.how


def test_a_sweep_for_a_scenario_measures_its_value_sizes_up_to_its_keyspace():
    from redsim.config import load_scenario

    def group(v, keys):
        return {"kind": "open", "rate": 10, "mix": {"GET": 1}, "value-size": v,
                "keyspace": {"keys": keys, "preload": 0}}

    sc = load_scenario({"name": "t", "duration": 1, "clients": [
        group(100, 2_000_000), group(1000, 50_000), group(10, 10_000), group(5000, 1000)]})
    spec = dataset.for_scenario(sc)
    # Four means: the smallest, the largest, and the one nearest their geometric
    # middle, sqrt(10 x 5000) = 224: 100.
    assert spec.value_sizes == (10, 100, 5000)
    # The default sizes below the largest keyspace, then the keyspace itself.
    assert spec.sizes == (10_000, 100_000, 1_000_000, 2_000_000)
    # 5000-B values (~5.7 KB a key with growth): 2 GiB holds ~370 K of them.
    assert dict(spec.shapes())[5000][-1] < 2_000_000


def test_calibrate_for_names_the_commands_it_cannot_drive(capsys):
    import argparse

    from redsim.cli import _calibration_for

    # collection-eviction.yaml: a hash group (HSET, HGET, HGETALL) over 200,000
    # hashes of 40-B fields, and a GET/SET group over 100,000 keys of 128 B.
    path = "scenarios/collection-eviction.yaml"
    args = argparse.Namespace(for_scenario=path, commands="SET,GET")
    commands, spec, eviction_value, sizes = _calibration_for(args, 2 << 30)
    out = capsys.readouterr().out
    assert commands == ("SET", "GET", "HGET", "HSET")
    # HSET's load carries the hashes' 40-B values (HGET's carries none).
    assert sizes == {"HSET": 40} and "HSET with 40-byte elements" in out
    # Eviction at the values of the group with the most keys: the hashes' 40 B.
    assert eviction_value == 40 and "eviction measured with 40-byte values" in out
    assert spec.value_sizes == (40, 128) and spec.sizes == (10_000, 100_000, 200_000)
    # redis-benchmark has no HGETALL load: it keeps the default and is named.
    assert "HGETALL: no redis-benchmark load drives them" in out


def test_the_eviction_dataset_is_cut_to_the_memory_the_sweep_may_fill():
    from redsim.calibrate import eviction_base_keys

    # 100-B values, 25-B names: 24 + 32 + 16 + 112 + 8 = 192 B a key, 211 with
    # growth: 2 GiB holds 10 M, so the default 600,000. 4 KB values: 5,720 B a
    # key, 2 GiB / 5,720 = 375,434. 100 MB of 4 KB: 18,331, raised to 100,000.
    assert eviction_base_keys(100, 2 << 30) == 600_000
    assert eviction_base_keys(4096, 2 << 30) == 375_434
    assert eviction_base_keys(4096, 100 << 20) == 100_000


def test_for_measures_collection_commands_at_the_keyspaces_element_sizes():
    # `calibrate --for` pushes and sets elements of the size the scenario's
    # keyspace gives them: a list's member-size, a hash's values (the group's
    # value-size), a list without a member-size at the keyspace's default,
    # 10 B (schema: "10 by default"). GET sends no value, and SADD's bench
    # load adds redis-benchmark's random integers, whatever the scenario's.
    from redsim.cli import collection_value_sizes
    from redsim.config import load_scenario

    def group(cmd, ks, **extra):
        return {"kind": "open", "rate": 10, "mix": {cmd: 1},
                "keyspace": {"keys": 100, "preload": 0, **ks}, **extra}

    sc = load_scenario({"name": "t", "duration": 1, "clients": [
        group("LPUSH", {"type": "list", "member-size": 64}),
        group("HSET", {"type": "hash", "member-size": 13}, **{"value-size": 200}),
        group("RPUSH", {"type": "list"}),
        group("SADD", {"type": "set", "member-size": 30}),
        group("GET", {})]})
    sizes = collection_value_sizes(sc, ("LPUSH", "HSET", "RPUSH", "SADD", "GET"))
    assert sizes == {"LPUSH": 64, "HSET": 200, "RPUSH": 10}
