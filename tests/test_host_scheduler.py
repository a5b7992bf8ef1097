"""The host's CPU scheduler and network costs (redsim/host), against theory and
hand calculations, without the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redsim.host.network import NetworkCosts
from redsim.host.scheduler import share, shares


@pytest.mark.parametrize("k,c", [(1, 1), (2, 1), (3, 2), (8, 6), (12, 6), (4, 6), (7, 3)])
def test_cpu_bound_threads_progress_at_min_one_c_over_k(k, c):
    # Processor sharing: k always-runnable threads on c cores each get min(1, c/k).
    rates, runnable = shares(np.ones(k), float(c))
    assert rates == pytest.approx(np.full(k, min(1.0, c / k)), abs=1e-12)
    assert runnable == pytest.approx(np.ones(k))


def test_threads_that_fit_run_at_full_speed():
    # 5 threads on 6 cores: even all runnable at once (1 + K <= 5 < 6) each has a core.
    rates, runnable = shares(np.full(5, 0.3), 6.0)
    assert rates == pytest.approx(np.ones(5), abs=1e-12)
    assert runnable == pytest.approx(np.full(5, 0.3))


def test_a_light_thread_next_to_a_cpu_bound_one_on_one_core():
    # Hand-worked fixed point. A is CPU-bound (b_A = 1). B wants 0.25 of a core:
    # whenever B runs, A runs too, so r_B = 1/2 and b_B = 0.25 / 0.5 = 0.5.
    # A runs alone half the time (r = 1) and shares the other half (1/2): r_A = 0.75.
    # Delivered CPU: A 0.75 x 1 + B 0.5 x 0.5 = 1 core, all of it.
    rates, runnable = shares(np.array([1.0, 0.25]), 1.0)
    assert rates == pytest.approx([0.75, 0.5], abs=1e-9)
    assert runnable == pytest.approx([1.0, 0.5], abs=1e-9)


def test_share_of_one_thread_against_a_poisson_binomial():
    # Thread 0 with three others runnable with 0.5, 0.5, 1 on 2 cores:
    # K = 1 + Bin(2, 0.5): P(K=1)=1/4, P(K=2)=1/2, P(K=3)=1/4, and
    # r_0 = 1/4 * min(1, 2/2) + 1/2 * 2/3 + 1/4 * 2/4 = 0.25 + 0.3333 + 0.125.
    r = share(np.array([1.0, 0.5, 0.5, 1.0]), 2.0)
    assert r[0] == pytest.approx(0.25 + 1 / 3 + 0.125, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=14),
       st.floats(0.5, 16.0))
def test_delivered_cpu_is_what_the_runnable_count_can_use(b, cores):
    # Sum over threads of b_i r_i = E[min(R, c)] with R the runnable count
    # (exact for independent threads): never more than the cores, never more than
    # the threads that want to run.
    b = np.array(b)
    r = share(b, cores)
    dist = np.zeros(len(b) + 1)
    dist[0] = 1.0
    for p in b:
        dist[1:] = dist[1:] * (1 - p) + dist[:-1] * p
        dist[0] *= 1 - p
    want = float(np.dot(dist, np.minimum(np.arange(len(b) + 1), cores)))
    assert float(np.dot(b, r)) == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert float(np.dot(b, r)) <= cores + 1e-9


def _net(coalesce_us=0.0, queues=2):
    return NetworkCosts(per_rx=2e-6, per_tx=0.5e-6, per_interrupt=3e-6,
                        coalesce=coalesce_us * 1e-6, queues=queues)


def test_an_interrupt_per_packet_without_moderation():
    # 1,000 segments in and 1,000 out in 10 ms: 2,000 interrupts of 3 us = 6 ms,
    # softirq 1,000 x 2 us + 1,000 x 0.5 us = 2.5 ms.
    softirq, irq = _net().cpu(1000, 1000, 0.01)
    assert softirq == pytest.approx(2.5e-3)
    assert irq == pytest.approx(6e-3)


def test_moderation_batches_packets_at_high_rates():
    # 2,000 packets in 10 ms over 2 queues: 100K packets/s per queue. With 20 us
    # of moderation each interrupt cycle is 20 us + the wait for the next packet
    # (10 us on average): lambda / (1 + lambda tau) = 1e5 / 3 interrupts/s per
    # queue, a third of the packets: 2,000 / 3 interrupts in all.
    _, irq = _net(20.0).cpu(1000, 1000, 0.01)
    assert irq == pytest.approx(2000 / 3 * 3e-6)
    # At a tenth of the rate (10K/s per queue) most packets get their own: 1/1.2.
    _, irq = _net(20.0).cpu(100, 100, 0.01)
    assert irq == pytest.approx(200 / 1.2 * 3e-6)
