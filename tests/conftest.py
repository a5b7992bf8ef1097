"""Tests against a real server: skipped without one, and run on a quiet machine.

The suite runs on two pytest-xdist workers. A test marked ``live`` measures a
redis-server's CPU time and memory, figures a simulation running on the other
core would disturb (shared caches and memory bandwidth), so while a live test
runs no other test does: every test holds a shared lock on one file for its
duration, a live test an exclusive one, and a live test waiting for its turn
raises a flag that keeps other tests from starting (so a stream of short tests
on the other worker cannot starve it).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
SLOW_FOLDERS = ("examples",)
"""Folders of tests/ whose tests are all in the slow lane. tests/examples is the
file users copy into their own repositories (S0 runs through the ``redsim``
fixture), so it carries no marker of this project; it is marked here."""

_DIR = Path(tempfile.gettempdir()) / f"redsim-tests-{os.getuid()}"
_LOCK = _DIR / "measure.lock"
_WANT = _DIR / "measure.wanted"
_STALE_S = 1800.0  # a flag older than this was left by a killed run


def pytest_collection_modifyitems(config, items):
    for item in items:
        parts = Path(item.path).resolve().relative_to(_TESTS).parts
        if len(parts) > 1 and parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _needs_redis(request):
    """A ``live`` test is skipped, with the reason in the summary, where no
    redis-server or redis-benchmark binary can be found (``.ci/run`` installs them)."""
    if request.node.get_closest_marker("live") is None:
        return
    from redsim.live.server import RedisNotFound, find_redis

    try:
        find_redis()
        find_redis("redis-benchmark")
    except RedisNotFound as exc:
        pytest.skip(f"no real Redis on this machine: {exc}")


def _wanted_since() -> float:
    """When a live test asked for quiet (``_WANT``'s mtime), or 0 if none is asking.
    The live test removes the file when it gets the lock, possibly between a check
    that it exists and a read of its time, so one stat answers both."""
    try:
        return _WANT.stat().st_mtime
    except FileNotFoundError:
        return 0.0


@pytest.fixture(autouse=True)
def _measurement_quiet(request, _needs_redis):
    _DIR.mkdir(exist_ok=True)
    live = request.node.get_closest_marker("live") is not None
    with open(_LOCK, "a") as f:
        if live:
            _WANT.touch()
            try:
                fcntl.flock(f, fcntl.LOCK_EX)
            finally:
                _WANT.unlink(missing_ok=True)
        else:
            while time.time() - _wanted_since() < _STALE_S:
                time.sleep(0.05)
            fcntl.flock(f, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.fixture
def saved_figures(monkeypatch):
    """The Figure behind every PNG the plot functions write during a test, by file
    name (``redsim.plots._save``, which ``redsim.sweep.plots`` uses too, is
    wrapped: the PNG is still written). A test can then check what a figure
    shows (panels, lines, labels, limits) rather than that a file exists."""
    from redsim import plots
    from redsim.sweep import plots as sweep_plots

    figures = {}
    write = plots._save

    def save(fig, path):
        figures[Path(path).name] = fig
        write(fig, path)

    monkeypatch.setattr(plots, "_save", save)
    monkeypatch.setattr(sweep_plots, "_save", save)
    return figures


@pytest.fixture(scope="session")
def s0_cache(request, tmp_path_factory):
    """Folder of the shared whole-S0 runs (``tests/s0_runs.py``): pytest's cache
    directory, so a re-run on unchanged code reads them; under
    ``--redsim-no-cache`` a folder of this session, shared by its xdist workers
    (the parent of each worker's base temp), so they are still simulated once."""
    if request.config.getoption("--redsim-no-cache"):
        base = tmp_path_factory.getbasetemp()
        if hasattr(request.config, "workerinput"):  # an xdist worker: the session's folder
            base = base.parent
        return base / "s0-runs"
    return request.config.cache.mkdir("redsim-s0")


@pytest.fixture
def python_kernel():
    """The kernel's functions run as Python for the test (``engine_helpers.interpreted``):
    for tests that call one step on a ``tiny_world``."""
    from tests.engine_helpers import interpreted

    with interpreted():
        yield
