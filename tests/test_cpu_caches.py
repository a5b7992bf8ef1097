"""The last-level cache's miss probability (``model/cpu_caches.py``) against an
LRU cache simulated access by access, and against its limits worked by hand."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from redsim.model import cpu_caches as cc


def _lru_miss(p: np.ndarray, cache_items: int, accesses: int, seed: int) -> float:
    """Miss ratio of an LRU cache of ``cache_items`` one-line keys under
    independent draws from ``p`` (the first fifth warms the cache)."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(len(p), size=accesses, p=p)
    cache: OrderedDict[int, None] = OrderedDict()
    warm, miss = accesses // 5, 0
    for i, k in enumerate(keys):
        if k in cache:
            cache.move_to_end(k)
            continue
        miss += i >= warm
        cache[k] = None
        if len(cache) > cache_items:
            cache.popitem(last=False)
    return miss / (accesses - warm)


@pytest.mark.parametrize("zipf", [None, 0.7, 0.99, 1.2])
@pytest.mark.parametrize("fraction", [0.05, 0.25, 0.6])
def test_che_matches_an_lru_cache_simulated_access_by_access(zipf, fraction):
    # 5,000 keys of one line each, a cache of 5-60 % of them. The simulated
    # ratio's standard error is <= sqrt(0.25 / 240,000) = 0.001; Che's
    # approximation of LRU is known to be within ~0.01 (Fricker et al. 2012):
    # tolerance 0.01, fixed before the comparison.
    n = 5_000
    p = np.full(n, 1.0 / n) if zipf is None else np.arange(1, n + 1.0) ** -zipf
    p = p / p.sum()
    simulated = _lru_miss(p, int(n * fraction), 300_000, seed=1)
    (che,), _ = cc.miss_probabilities([cc.KeyAccess(0, n, 1.0, zipf, key_bytes=cc.LINE)],
                                      int(n * fraction) * cc.LINE)
    assert abs(che - simulated) <= 0.01, (che, simulated)


def test_a_dataset_that_fits_never_misses_and_uniform_access_misses_one_minus_c_over_f():
    one = cc.KeyAccess(0, 1_000_000, 1.0, None, key_bytes=256)
    # 1 M keys x 256 B = 256 MB: a 300 MB cache holds it all.
    assert cc.miss_probabilities([one], 300e6) == ([0.0], 0.0)
    # A 64 MB cache holds a quarter: uniform access misses 1 - 64/256 = 0.75,
    # and so does a uniformly random sample (eviction's).
    (miss,), uniform = cc.miss_probabilities([one], 64e6)
    assert miss == pytest.approx(0.75, abs=1e-6) and uniform == pytest.approx(0.75, abs=1e-6)


def test_a_hot_set_that_fits_misses_only_with_the_rest():
    # 90 % of accesses on 10,000 hot keys (2.5 MB at 256 B) in a 1 M-key
    # dataset, a 32 MB cache: the hot set stays (each hot key is drawn 90x as
    # often as a cold one) and the other 29.5 MB hold ~12 % of the cold keys,
    # so the misses are ~10 % x 0.88 = 8.8 %, against 87 % for uniform access.
    hot = cc.KeyAccess(0, 1_000_000, 1.0, None, hot_share=0.9, hot_keys=10_000, key_bytes=256)
    (miss,), _ = cc.miss_probabilities([hot], 32e6)
    assert 0.07 < miss < 0.10, miss
    (flat,), _ = cc.miss_probabilities([cc.KeyAccess(0, 1_000_000, 1.0, key_bytes=256)], 32e6)
    assert flat == pytest.approx(1 - 32e6 / 256e6, abs=1e-6)


def test_binning_a_large_zipf_changes_the_miss_probability_by_under_a_thousandth():
    # Che solved key by key over 1 M keys (no bins) against the binned solution.
    n, s, size, cache = 1_000_000, 0.9, 256.0, 16e6
    p = np.arange(1, n + 1.0) ** -s
    p /= p.sum()
    lo, hi = 0.0, 1.0
    while np.sum(size * -np.expm1(-p * hi)) < cache:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.sum(size * -np.expm1(-p * mid)) < cache else (lo, mid)
    exact = float(np.sum(p * np.exp(-p * lo)))
    (binned,), _ = cc.miss_probabilities([cc.KeyAccess(0, n, 1.0, s, key_bytes=size)], cache)
    assert abs(binned - exact) < 1e-3, (binned, exact)


@pytest.mark.parametrize("s", [0.5, 1.0, 1.5])
def test_the_harmonic_numbers_past_the_exact_part(s):
    k = np.array([10_001, 123_457, 2_000_000], dtype=np.float64)
    exact = [np.sum(np.arange(1, int(x) + 1, dtype=np.float64) ** -s) for x in k]
    assert np.allclose(cc._harmonic(k, s), exact, rtol=1e-10, atol=0)


def test_two_groups_on_the_same_keys_share_the_cache():
    # Two uniform groups over the same 1 M rows at equal rates are one uniform
    # stream: each misses as the one would. A group on rows of its own adds
    # its keys to the footprint: 2 M keys in a cache for 0.5 M misses 3/4.
    a, b = cc.KeyAccess(0, 1_000_000, 1.0, key_bytes=64), cc.KeyAccess(0, 1_000_000, 1.0,
                                                                         key_bytes=64)
    both, _ = cc.miss_probabilities([a, b], 32e6)
    assert both == pytest.approx([0.5, 0.5], abs=1e-6)
    c = cc.KeyAccess(1_000_000, 1_000_000, 1.0, key_bytes=64)
    apart, _ = cc.miss_probabilities([a, c], 32e6)
    assert apart == pytest.approx([0.75, 0.75], abs=1e-6)


# ---- the hierarchy's cost per key access -------------------------------------------

MIB = 1 << 20
HIER = cc.Hierarchy(l2=2 * MIB, llc=260 * MIB, tlb_reach=6 * MIB,
                    penalty={"l2": 0.0, "tlb": 0.146e-6, "llc": 0.085e-6, "page-walk": 0.149e-6})


def test_a_key_spans_its_allocations_as_jemalloc_rounds_them():
    # 16-byte key, 3-byte value (8-byte quantum): dictEntry 24, key sds
    # 1 + 16 + 1 = 18 -> 24, an embedded robj 16 + 3 + 3 + 1 = 23 -> 24, and a
    # bucket's 8: 80 bytes. A 64-byte raw value: robj 16 and sds 3 + 64 + 1 =
    # 68 -> 80: 24 + 24 + 16 + 80 + 8 = 152; a TTL adds an entry and a bucket: 184.
    assert cc.key_span(3, 16, False) == 80
    assert cc.key_span(64, 16, False) == 152
    assert cc.key_span(64, 16, True) == 184


def test_the_calibrated_dataset_costs_nothing_and_a_smaller_one_less():
    # The calibrated dataset: 100,000 uniform keys spanning 80 B each, 8.0 MB
    # against a 6 MiB TLB reach: p = 1 - 6,291,456 / 8,000,000 = 0.2136; its
    # lines, 3 x 64 + 8 = 200 B each (20 MB), fit the LLC and its pages' tables
    # the L2 x 512. Four loads: 4 x 0.146 x 0.2136 = 0.1247 us per access.
    ref = cc.touch(cc.KeyAccess(0, 100_000, 1.0), 3, 16, False)
    (cost,), _ = cc.miss_cost([ref], HIER)
    assert cost == pytest.approx(4 * 0.146e-6 * (1 - 6 * MIB / 8e6), rel=1e-9)
    small = cc.touch(cc.KeyAccess(0, 10_000, 1.0), 3, 16, False)
    (zero,), _ = cc.miss_cost([small], HIER)
    assert zero == 0.0  # 0.8 MB: fits every level


def test_far_past_every_level_a_key_access_pays_every_penalty():
    # 10^9 keys of 64 B: every level misses with p = 1 - C/F, within 1.4 % of 1
    # (the page walk's 1 GiB against 152 GB of span); five loads (a raw value's
    # first line too): 5 x (0.146 + 0.085 + 0.149) = 1.90 us per access.
    big = cc.touch(cc.KeyAccess(0, 10**9, 1.0), 64, 16, False)
    (cost,), uniform = cc.miss_cost([big], HIER)
    assert cost == pytest.approx(5 * (0.146 + 0.085 + 0.149) * 1e-6, rel=0.01)
    assert uniform == pytest.approx((0.146 + 0.085 + 0.149) * 1e-6, rel=0.01)


def test_a_zipf_hot_set_pays_far_less_than_uniform_access_to_the_same_keys():
    uniform = cc.touch(cc.KeyAccess(0, 10_000_000, 1.0), 64, 16, False)
    skewed = cc.touch(cc.KeyAccess(0, 10_000_000, 1.0, zipf=1.1), 64, 16, False)
    (u,), _ = cc.miss_cost([uniform], HIER)
    (z,), _ = cc.miss_cost([skewed], HIER)
    assert z < 0.5 * u


def test_redis8_prefetching_overlaps_a_batchs_misses_but_not_the_ttl_dicts():
    # Five loads (a raw value) and no TTLs: all prefetched, 10 in flight at once:
    # 1/10 of their cost. Seven loads (TTLs): the expires dict's two in full,
    # the other five at 1/10: (2 + 0.5) / 7.
    raw = cc.touch(cc.KeyAccess(0, 10**6, 1.0), 64, 16, False)
    ttl = cc.touch(cc.KeyAccess(0, 10**6, 1.0), 64, 16, True)
    assert cc.PREFETCH_OVERLAP == 10
    assert cc.prefetched_share(raw) == pytest.approx(0.1)
    assert cc.prefetched_share(ttl) == pytest.approx(2.5 / 7)


def test_only_redis8_io_threads_prefetch():
    from redsim.config import load_scenario

    def sc(model, n):
        return load_scenario({"name": "t", "duration": 1, "server": {"io-threads": n},
                              "engine": {"io-threads-model": model},
                              "clients": [{"kind": "open", "rate": 10, "mix": {"GET": 1},
                                           "keyspace": {"keys": 10**6, "preload": 0}}]})

    assert cc.prefetched(sc("async", 4))
    assert not cc.prefetched(sc("async", 1)) and not cc.prefetched(sc("sync", 4))
    # A key access costs a tenth of its misses (five loads, no TTL), less the
    # calibrated dataset's (100,000 keys of 3 B, 25-byte names) in full.
    (full,), _ = cc.miss_deltas(sc("sync", 4))
    (pre,), _ = cc.miss_deltas(sc("async", 4))
    (plain,), _ = cc.miss_deltas(sc("sync", 1))
    (ref,), _ = cc.miss_cost([cc.touch(cc.KeyAccess(0, 100_000, 1.0), 3, 25, False)],
                             cc.hierarchy(sc("sync", 1)))
    assert full == plain
    assert pre == pytest.approx(0.1 * (full + ref) - ref, rel=1e-9)


def _command_cpu(command: str, keyspace: dict, miss: str | None) -> float:
    """µs of the commands' share of main-thread CPU per command: one closed
    connection, 2 s of 3-byte values."""
    from redsim import load_scenario, simulate

    engine = {"cpu": {"miss": miss}} if miss else {}
    sc = {"name": "t", "duration": 2, "warmup": 0.5, "sample-interval": 0.25,
          "server": {"save": ""}, "engine": engine,
          "clients": [{"processes": 1, "pool": {"max-size": 1}, "mix": {command: 1},
                       "key-size": 25, "value-size": 3, "keyspace": keyspace}]}
    s = simulate(load_scenario(sc), seed=1).summary
    return s["cpu_commands_share"] / s["ops_per_sec"] * 1e6


@pytest.mark.slow  # four short runs: ~6 s once the kernel is compiled
def test_a_command_costs_what_was_measured_on_the_dataset_it_was_measured_on():
    # redsim calibrate measures GET over 100,000 keys of 3 B (25-byte names)
    # and LPUSH onto one list: on exactly those datasets the miss model must
    # add nothing to the measured costs. LPUSH was charged 0.33 µs less (the
    # 100,000 keys' misses, taken off a one-key measurement), which made the
    # held-out LPUSH row -62 % and HSET -64 % (2026-11-28).
    get = {"keys": 100_000}
    lpush = {"keys": 1, "type": "list", "member-size": 3, "preload": 0}
    for command, ks in (("GET", get), ("LPUSH", lpush)):
        assert _command_cpu(command, ks, None) == pytest.approx(
            _command_cpu(command, ks, "none"), rel=0.01), command


def test_key_span_is_the_kernels_string_key_bytes_plus_its_buckets():
    # key_span restates objects.string_key_bytes in Python (its docstring says
    # why): the two must agree, plus 8 B of the main dict's bucket array and 8
    # of the expires dict's when the key has a TTL.
    from redsim.model.objects import string_key_bytes

    for value in (0, 3, 44, 45, 64, 1000, 4096, 100_000):
        for key_len in (1, 16, 40, 300):
            for ttl in (False, True):
                for q16 in (False, True):
                    want = string_key_bytes(key_len, value, False, False, ttl, q16) \
                        + 8 + (8 if ttl else 0)
                    assert cc.key_span(value, key_len, ttl, quantum16=q16) == want
                    want_int = string_key_bytes(key_len, 0, True, False, ttl, q16) \
                        + 8 + (8 if ttl else 0)
                    assert cc.key_span(0, key_len, ttl, integer=True, quantum16=q16) \
                        == want_int
