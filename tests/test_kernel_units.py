"""Kernel plumbing on tiny worlds, with hand-worked values: the main thread's
clock (``main_thread``), the shared L'Ecuyer generator (``rng``) and the
configure steps' bookkeeping (``blueprint``)."""

from __future__ import annotations

import pytest

from redsim.config import load_scenario
from redsim.model import main_thread, rng
from redsim.model import state as S
from redsim.model.blueprint import Blueprint
from tests.engine_helpers import tiny_world

# Steps called on a World of arrays: as Python, not compiled for that type.
pytestmark = pytest.mark.usefixtures("python_kernel")


def _world():
    return tiny_world({"name": "u", "sample-interval": 0.1,
                       "clients": [{"name": "a", "processes": 1}]})[0]


def _row(w, row):
    return [float(x) for x in w.rc_wf.reshape(-1)[row * int(w.I[S.N_WIN]):][:4]]


def test_busy_advances_the_clock_and_records_the_span_per_window():
    w = _world()
    w.F[S.T] = 0.05
    main_thread.busy(w, S.W_CPU_FORK, 0.1)
    # [0.05, 0.15) over windows of 0.1 s: 0.05 in window 0, 0.05 in window 1.
    assert w.F[S.T] == pytest.approx(0.15)
    assert _row(w, S.W_CPU_FORK) == pytest.approx([0.05, 0.05, 0.0, 0.0])


def test_busy_until_holds_the_thread_to_a_time():
    w = _world()
    w.F[S.T] = 0.15
    main_thread.busy_until(w, S.W_CPU_AOF, 0.35)
    # [0.15, 0.35): 0.05 in window 1, 0.1 in window 2, 0.05 in window 3.
    assert w.F[S.T] == 0.35
    assert _row(w, S.W_CPU_AOF) == pytest.approx([0.0, 0.05, 0.1, 0.05])


def test_lecuyer_uniform_from_known_states():
    w = _world()
    w.I[S.DISK_RNG1], w.I[S.DISK_RNG2] = 1, 1
    u = rng.lecuyer_uniform(w.I, S.DISK_RNG1, S.DISK_RNG2)
    # x1 = 40014 * 1 mod m1, x2 = 40692 * 1 mod m2; z = (x1 - x2) mod (m1 - 1)
    # = 2147483562 - 678 = 2147482884; u = z / m1 = 2147482884 / 2147483563.
    assert (int(w.I[S.DISK_RNG1]), int(w.I[S.DISK_RNG2])) == (40014, 40692)
    assert u == 2147482884 / 2147483563


def test_a_part_filled_twice_or_not_at_all_is_a_wiring_error():
    b = Blueprint(load_scenario({"name": "u", "clients": [{"name": "a"}]}), 1)
    b.fill("ep", key=None, idle=None)
    with pytest.raises(RuntimeError, match=r"part 'ep': field\(s\) \['idle'\] filled twice"):
        b.fill("ep", idle=None)
    with pytest.raises(RuntimeError, match=r"part 'cn' \(Conns\): no step filled \['partial'"):
        b.parts()
