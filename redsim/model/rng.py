"""Random streams for the kernel: per-component buffers of uniforms.

No Redis source: the simulator's random streams (where Redis itself draws at
random, as eviction's sampling does, the module that models it says so).

Each component (the server's service-time noise, and per client group: arrivals
or think times, command mix and keys, value sizes) has its own
``numpy.random.Generator`` spawned from the run's ``SeedSequence``, so streams never
overlap and adding a group does not shift another group's numbers. Generators
cannot cross into numba cheaply, so each stream fills a row of a float64
buffer; the kernel reads uniforms from it and transforms them itself (the same
arithmetic compiled or not, so both give identical results). When any row is
half used the kernel returns ``RET_REFILL`` at a safe point and Python slides
the unread half to the front and refills the rest.
"""

from __future__ import annotations

import math

import numpy as np

from redsim.model.jit import hot_leaf, leaf
from redsim.model.state import (
    DIST_EMPIRICAL,
    DIST_EXPONENTIAL,
    DIST_FIXED,
    DIST_LOGNORMAL,
    DIST_MIXTURE,
    DIST_UNIFORM,
    KS_RNG1,
    KS_RNG2,
    RNG_LOW,
    RNG_OVERRUN,
    RNG_SIZE,
)

# The kernel state this module owns; model/state.py lays it out (model/layout.py
# says what each entry holds: where, name, dtype, unit, kind, doc).
FIELDS = (
    ("I", "RNG_LOW", "i8", "-", "state",
     "1: a stream's buffer is half used (or write-once rows ran low): the kernel returns "
     "RET_REFILL"),
    ("I", "RNG_OVERRUN", "i8", "-", "state",
     "1 once a stream read past its buffer's end (reused draws; kernel.py raises)"),
    ("I", "RNG_SIZE", "i8", "-", "size",
     "uniforms per stream buffer (rg buf row length), a power of two"),
    ("tb", "emp_p", "f8", "-", "config",
     "every empirical distribution's table: cumulative probabilities, 0 to 1, increasing"),
    ("tb", "emp_x", "f8", "-", "config",
     "every empirical distribution's table: the values at those probabilities (the "
     "distribution's unit)"),
    ("tb", "dmix_cum", "f8", "-", "config",
     "every mixture distribution's components: cumulative weight, the last of each 1"),
    ("tb", "dmix_kind", "i8", "-", "config",
     "every mixture's components: distribution kind (DIST_FIXED, ..., DIST_EMPIRICAL)"),
    ("tb", "dmix_mean", "f8", "-", "config", "every mixture's components: mean"),
    ("tb", "dmix_low", "f8", "-", "config",
     "every mixture's components: low bound (empirical: first table point)"),
    ("tb", "dmix_high", "f8", "-", "config",
     "every mixture's components: high bound (empirical: last table point)"),
    ("tb", "dmix_sigma", "f8", "-", "config", "every mixture's components: lognormal sigma"),
    ("rg", "buf", "f8", "-", "state",
     "the random streams' uniforms in [0, 1), one row of RNG_SIZE per stream"),
    ("rg", "pos", "i8", "-", "state", "per stream: the next unread uniform of its row"),
)


class RandomStreams:
    """Owns the generators and the uniform buffers the kernel draws from."""

    def __init__(self, seed: int, n_streams: int, size: int) -> None:
        if size & (size - 1):
            raise ValueError(f"buffer size must be a power of two, got {size}")
        children = np.random.SeedSequence(seed).spawn(n_streams)
        self.generators = [np.random.Generator(np.random.PCG64(c)) for c in children]
        self.buf = np.empty((n_streams, size), np.float64)
        self.pos = np.zeros(n_streams, np.int64)
        for s, g in enumerate(self.generators):
            g.random(out=self.buf[s])

    def refill(self) -> None:
        """Move each row's unread part to the front and draw fresh numbers behind it."""
        size = self.buf.shape[1]
        for s, g in enumerate(self.generators):
            p = int(self.pos[s])
            if p == 0:
                continue
            rest = size - p
            row = self.buf[s]
            row[:rest] = row[p:]
            g.random(out=row[rest:])  # in place: no temporary, no second copy
            self.pos[s] = 0


@leaf
def uniform(w, s):
    """Next uniform in [0, 1) from stream ``s``."""
    pos = w.rg_pos
    I = w.I
    n = I[RNG_SIZE]
    p = pos[s]
    if p >= n:  # cannot happen if refills keep up; flagged, never silent
        I[RNG_OVERRUN] = 1
        p = 0
    u = w.rg_buf[s * n + p]
    pos[s] = p + 1
    if p + 1 == n // 2:
        I[RNG_LOW] = 1
    return u


@leaf
def peek_uniform(w, s, i):
    """The uniform stream ``s`` will return ``i`` draws from now, without
    drawing it (-1.0 if it lies past the buffer's end)."""
    n = w.I[RNG_SIZE]
    p = w.rg_pos[s] + i
    if p >= n:
        return -1.0
    return w.rg_buf[s * n + p]


@leaf
def exponential(w, s, mean):
    """Exponential variate with the given mean (inverse transform)."""
    return -mean * math.log(1.0 - uniform(w, s))


@leaf
def empirical(w, first, last, u):
    """The empirical distribution whose table is points ``first..last`` of
    ``tb_emp_p`` (probabilities, 0 to 1, increasing) and ``tb_emp_x`` (values), at
    the uniform ``u``: the segment ``p[i] ≤ u < p[i+1]`` (binary search), then
    linear interpolation between its values."""
    p = w.tb_emp_p
    lo = first
    hi = last
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if p[mid] <= u:
            lo = mid
        else:
            hi = mid
    x0 = w.tb_emp_x[lo]
    return x0 + (u - p[lo]) / (p[hi] - p[lo]) * (w.tb_emp_x[hi] - x0)


@hot_leaf
def draw(w, s, kind, mean, low, high, sigma):
    """One variate of a scenario distribution (see ``config.schema`` Dist) from stream s.

    A mixture (``low`` and ``high`` its first and last component in the tb
    ``dmix_*`` tables) picks a component by one uniform against the cumulative
    weights, then draws from it; its components are never mixtures.
    """
    if kind == DIST_MIXTURE:
        u = uniform(w, s)
        j = int(low)
        last = int(high)
        while j < last and u >= w.tb_dmix_cum[j]:
            j += 1
        return draw_simple(w, s, w.tb_dmix_kind[j], w.tb_dmix_mean[j], w.tb_dmix_low[j],
                           w.tb_dmix_high[j], w.tb_dmix_sigma[j])
    return draw_simple(w, s, kind, mean, low, high, sigma)


@hot_leaf
def draw_simple(w, s, kind, mean, low, high, sigma):
    """One variate of a distribution that is not a mixture, from stream s.

    Lognormal takes the arithmetic mean and the log-space sigma, so
    mu = ln(mean) − sigma²/2; its normal comes from Box–Muller. For an empirical
    distribution ``low`` and ``high`` hold its first and last point in ``tb_emp_p``
    and ``tb_emp_x`` (build.py).
    """
    if kind == DIST_FIXED:
        return mean
    if kind == DIST_EXPONENTIAL:
        return exponential(w, s, mean)
    if kind == DIST_UNIFORM:
        return low + (high - low) * uniform(w, s)
    if kind == DIST_LOGNORMAL:
        u1 = 1.0 - uniform(w, s)
        u2 = uniform(w, s)
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        return math.exp(math.log(mean) - 0.5 * sigma * sigma + sigma * z)
    if kind == DIST_EMPIRICAL:
        return empirical(w, int(low), int(high), uniform(w, s))
    return mean


# L'Ecuyer's combined multiplicative generator (CACM 31(6), 1988): two 31-bit
# LCGs, period ~2.3e18. Every product stays below 2^47, so the same integer
# code is exact compiled and uncompiled.
_M1, _A1 = 2147483563, 40014
_M2, _A2 = 2147483399, 40692


@leaf
def lecuyer_uniform(I, i1, i2):
    """Next uniform in (0, 1) of L'Ecuyer's combined generator (MRG, two
    multiplicative components) whose states are the integer scalars ``I[i1]``
    and ``I[i2]``: a generator a mechanism keeps in two scalars of its own when
    it may draw more numbers in one iteration than a stream's buffer holds."""
    x1 = (_A1 * I[i1]) % _M1
    x2 = (_A2 * I[i2]) % _M2
    I[i1] = x1
    I[i2] = x2
    z = (x1 - x2) % (_M1 - 1)
    if z == 0:
        z = _M1 - 1
    return z / _M1


def lecuyer_seeds(seed: int, spawn_key: int) -> tuple[int, int]:
    """Initial states of a ``lecuyer_uniform`` generator for a run's root seed,
    one generator per ``spawn_key`` (its own SeedSequence child)."""
    a, b = np.random.SeedSequence(seed, spawn_key=(spawn_key,)).generate_state(2)
    return 1 + int(a) % (_M1 - 1), 1 + int(b) % (_M2 - 1)


@leaf
def server_uniform(w):
    """Next uniform in (0, 1) from the keyspace's generator (eviction sampling, LFU).

    Eviction can draw an unbounded number of samples in one event-loop iteration,
    more than a pre-filled stream buffer holds, so it has a generator of its own
    in two integer scalars of ``I`` instead.
    """
    return lecuyer_uniform(w.I, KS_RNG1, KS_RNG2)


def server_seeds(seed: int) -> tuple[int, int]:
    """Initial states of ``server_uniform`` for a run's root seed (its own spawn key)."""
    return lecuyer_seeds(seed, 0x4B455953)


# ---- the preload's draws (Python, at build time) ----------------------------------------


PRELOAD_STREAM = 0x5052454C  # "PREL": the preload's own SeedSequence spawn key


def preload_generator(seed: int, part: int) -> np.random.Generator:
    """The preload's generator ``part`` (its own SeedSequence child of the run's
    seed, so preloading never shifts the kernel's streams): 0 for the keys'
    plan, 1 for the expires' order (``preload.py``), 2 for the collection
    keyspaces' element counts (``collection.py``)."""
    return np.random.Generator(np.random.PCG64(
        np.random.SeedSequence(seed, spawn_key=(PRELOAD_STREAM, part))))


def variates(rng: np.random.Generator, d, n: int) -> np.ndarray:
    """``n`` variates of a scenario distribution ``d`` from a numpy generator,
    as ``draw`` defines them (the preload's values and element counts)."""
    if d.kind == "mixture":  # each variate from the component one uniform picks
        which = np.minimum(np.searchsorted(np.cumsum(d.weights), rng.random(n), side="right"),
                           len(d.parts) - 1)
        out = np.empty(n)
        for j, part in enumerate(d.parts):
            mask = which == j
            out[mask] = variates(rng, part, int(mask.sum()))
        return out
    if d.kind == "exponential":
        return rng.exponential(d.mean, n)
    if d.kind == "uniform":
        return rng.uniform(d.low, d.high, n)
    if d.kind == "lognormal":
        return rng.lognormal(math.log(d.mean) - 0.5 * d.sigma ** 2, d.sigma, n)
    if d.kind == "empirical":
        return np.interp(rng.random(n), d.table_p, d.table_x)
    return np.full(n, float(d.mean))


# ---- configuration (Python, once per run) ---------------------------------------------


def configure(b) -> None:
    """The random streams (one for service noise, ``STREAMS_PER_GROUP`` per
    group, then the network's when its round trip is drawn) and their buffers.

    One iteration can draw a few numbers per ready connection and per command,
    and one poll a few per source; a buffer twice that keeps refills between
    them. (``start_sources`` draws one think time per timed source in one go;
    memoryless groups draw nothing per source.)
    """
    from redsim.model import state as S

    C, G = b.size.conns, b.size.groups
    need = 8 * (C * b.size.max_pipeline + b.size.timed) + 4096
    size = 1 << max(16, int(math.ceil(math.log2(need))))
    # A stream's seed depends on its index only (SeedSequence.spawn), so the
    # network's stream (one when network.rtt is a distribution: network.configure
    # set RTT_JITTER), last, leaves every other stream's numbers as they were.
    n = 1 + S.STREAMS_PER_GROUP * G + int(b.I[S.RTT_JITTER])
    streams = RandomStreams(b.seed, n, size)
    b.fill("rg", buf=streams.buf, pos=streams.pos)
    b.I[S.RNG_SIZE] = size
    b.extra["streams"] = streams
