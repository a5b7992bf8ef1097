"""Whole runs of the GitLab scenario (seed S0), simulated once and shared.

A 30-minute S0 run takes about a minute of one core. Several test files need
the same runs; ``s0_results`` simulates each (scenario, overrides, seed) once
and keeps the ``Result`` on disk, so every other test file, the other xdist
worker and a later session on unchanged code read it back.

Why sharing is safe: the project guarantees byte-identical results for the
same scenario hash, seed and model version (``redsim.result.model_version``,
what ``tests/test_results_fresh.py`` relies on too). The key here is stricter
than that: it also hashes every other file of ``redsim/`` (``simulation.py``
and ``result.py`` build the Result outside the model version's files) and the
versions of Python, numpy, pandas and numba (the pickle's readers), so any
code change simulates afresh. Derived tables (``Result.phases()``) are
computed by the caller from the stored series each time.

The folder is the session's ``s0_cache`` fixture (``tests/conftest.py``):
pytest's cache directory, or a folder of this session only under
``--redsim-no-cache``; ``pytest --cache-clear`` empties it. A file lock per
run keeps two workers from simulating the same run at once.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import pickle
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "gitlab-2022.yaml"


@functools.cache
def code_key() -> str:
    """The model version plus a hash of every redsim source file and the versions
    of what reads and writes the stored runs."""
    import numba
    import numpy
    import pandas

    from redsim.result import model_version

    h = hashlib.sha256()
    for path in sorted((ROOT / "redsim").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    for part in (model_version(), sys.version, numpy.__version__, pandas.__version__,
                 numba.__version__):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:24]


def _scenario(overrides: Sequence[str], scenario: Path):
    from redsim.config import load_scenario

    return load_scenario(scenario, overrides=list(overrides))


def run_key(overrides: Sequence[str], seed: int, scenario: Path = SCENARIO) -> str:
    """File name of one run: the scenario hash (overrides applied), seed, code."""
    from redsim.config import scenario_hash

    return f"{scenario_hash(_scenario(overrides, scenario))[:24]}-s{seed}-{code_key()}"


def _simulate(job: tuple[tuple[str, ...], int, str]):
    overrides, seed, scenario = job
    from redsim import simulate

    return simulate(_scenario(overrides, Path(scenario)), seed=seed, progress=False)


def _store(path: Path, result) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    os.replace(tmp, path)  # readers never see half a file


def s0_results(folder: Path, seeds: Sequence[int], overrides: Sequence[str] = (),
               scenario: Path = SCENARIO, jobs: int = 2) -> list:
    """``Result``s of ``scenario`` with ``overrides`` for each of ``seeds``, in
    order: read from ``folder`` or simulated (the missing ones ``jobs`` at a time,
    one process each; the machine has two cores) and stored there."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    keys = [run_key(overrides, s, scenario) for s in seeds]
    with ExitStack() as locks:
        for key in sorted(set(keys)):  # one order for every worker: no deadlock
            f = locks.enter_context(open(folder / f"{key}.lock", "a"))
            fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        missing = [(k, s) for k, s in dict(zip(keys, seeds, strict=True)).items()
                   if not (folder / f"{k}.pkl").exists()]
        jobs_ = [(tuple(overrides), s, str(scenario)) for _, s in missing]
        if len(jobs_) > 1 and jobs > 1:
            with ProcessPoolExecutor(max_workers=min(jobs, len(jobs_))) as pool:
                fresh = list(pool.map(_simulate, jobs_))
        else:
            fresh = [_simulate(j) for j in jobs_]
        for (k, _), result in zip(missing, fresh, strict=True):
            _store(folder / f"{k}.pkl", result)
        return [pickle.loads((folder / f"{k}.pkl").read_bytes()) for k in keys]


def s0_result(folder: Path, seed: int, overrides: Sequence[str] = (),
              scenario: Path = SCENARIO):
    """One ``Result``, as ``s0_results`` gives them."""
    [result] = s0_results(folder, [seed], overrides, scenario)
    return result
