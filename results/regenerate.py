"""Regenerate everything in results/ that is stale (or everything, with --force).

    python results/regenerate.py            # what changed since it was made
    python results/regenerate.py --check    # list what is stale; exit 1 if anything is
    python results/regenerate.py --force    # all of it (~20 min on 2 cores)

A result is stale when the scenario it was made from, or the model's source
(``redsim.result.model_version``), is no longer what it was: a run folder's
``provenance.json`` records both; a sweep's run files record the model. Same
scenario + seed + model version gives byte-identical files, so a result that
is not stale needs no rerun.

What is here (see results/README.md): a run folder per shipped scenario (S0:
GitLab 2022 and its TTL-8h fix; the persistence runs of seeds S1 and S2, made by
``results/persistence.py``; seed S3's fragmentation run; the web-cache and
open-loop-ramp examples),
every shipped S0 sweep shortened to 10 simulated minutes, seed S4's
instances-per-host sweep with its figure (``results/s4.py``), Redis 6/7's
I/O threads on an 8-core host (``results/io_threads.py``), and Redis 8's async
I/O threads on 8 and 64 cores (``results/io_threads_async.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SCENARIOS = ROOT / "scenarios"


@dataclass(frozen=True)
class RunResult:
    """A run folder made from a shipped scenario with its own seed."""

    folder: str
    scenario: str

    def stale(self) -> str:
        """Why the folder is stale, or "" if it is fresh."""
        from redsim.config import load_scenario, scenario_hash
        from redsim.result import model_version

        prov_file = HERE / self.folder / "provenance.json"
        if not prov_file.exists():
            return "missing"
        prov = json.loads(prov_file.read_text())
        if prov.get("scenario_hash") != scenario_hash(load_scenario(SCENARIOS / self.scenario)):
            return f"scenarios/{self.scenario} changed"
        if prov.get("model") != model_version():
            return "the model changed"
        return ""


@dataclass(frozen=True)
class SweepResult:
    """A sweep folder: its file, the options it ran with, and sweep or frontier."""

    folder: str
    sweep: str
    options: tuple[str, ...]
    replications: int
    frontier: bool = False

    def stale(self) -> str:
        from redsim.result import model_version

        runs = sorted((HERE / self.folder / "runs").glob("*.json"))
        if not runs:
            return "missing"
        models = {json.loads(p.read_text()).get("model") for p in runs}
        return "" if models == {model_version()} else "the model changed"


RUNS = [
    RunResult("gitlab-2022", "gitlab-2022.yaml"),
    RunResult("gitlab-2022-ttl-8h", "gitlab-2022-ttl-8h.yaml"),
    RunResult("web-cache", "web-cache.yaml"),
    RunResult("open-loop-ramp", "open-loop-ramp.yaml"),
    RunResult("s3-fragmentation", "jemalloc-fragmentation.yaml"),
    RunResult("s3-defrag", "jemalloc-defrag.yaml"),
    RunResult("reconnect-storm", "reconnect-storm.yaml"),
    RunResult("reconnect-storm-long-timeout", "reconnect-storm-long-timeout.yaml"),
    RunResult("client-surge", "client-surge.yaml"),
    RunResult("big-key-delete", "big-key-delete.yaml"),
    RunResult("keys-command", "keys-command.yaml"),
    RunResult("collection-eviction", "collection-eviction.yaml"),
    RunResult("collection-eviction-lazy", "collection-eviction-lazy.yaml"),
    RunResult("replica-resync-loop", "replica-resync-loop.yaml"),
    RunResult("replica-full-sync-loop", "replica-full-sync-loop.yaml"),
    RunResult("replica-full-sync-large-limit", "replica-full-sync-large-limit.yaml"),
    RunResult("replica-dual-channel", "replica-dual-channel.yaml"),
]
PERSISTENCE = [
    RunResult(f"s2-aof-fsync/{n}", f"{n}.yaml")
    for n in ("aof-fsync-always", "aof-fsync-everysec", "get-cache-data")
] + [
    RunResult(f"s1-fork-thp/{n}", f"{n}.yaml")
    for n in ("fork-thp-ec2", "fork-thp-bare-metal", "fork-thp-off-bare-metal")
]
SWEEPS = [
    SweepResult("sweeps/s0-cpu-headroom-10m", "s0-cpu-headroom.yaml", ("duration=10m",), 2),
    SweepResult("sweeps/s0-ttl-connections-10m", "s0-ttl-connections.yaml",
                ("duration=10m",), 1),
    SweepResult("sweeps/s0-ttl-connections-frontier-10m", "s0-ttl-connections.yaml",
                ("duration=10m",), 1, frontier=True),
    SweepResult("sweeps/s0-ttl-10m", "s0-ttl.yaml", ("duration=10m",), 1),
    SweepResult("sweeps/s0-connections-10m", "s0-connections.yaml", ("duration=10m",), 1),
    SweepResult("sweeps/s0-fsync-10m", "s0-fsync.yaml", ("duration=10m",), 1),
    SweepResult("s4-multi-instance", "s4-instances.yaml", (), 2),
    SweepResult("io-threads", "io-threads.yaml", (), 1),
    SweepResult("io-threads-async", "io-threads-async.yaml", (), 1),
    SweepResult("sweeps/replica-frontier", "replica-frontier.yaml", (), 1),
]
FIGURES = {"s4-multi-instance": "s4", "io-threads": "io_threads",
           "io-threads-async": "io_threads_async"}
"""Sweep folders whose figure a script of this folder draws (``<script>.figure()``)."""


def _run_folder(r: RunResult) -> None:
    from redsim import load_scenario, simulate

    sc = load_scenario(SCENARIOS / r.scenario)
    simulate(sc, seed=sc.seed, progress=False).save(HERE / r.folder)


def _sweep(s: SweepResult) -> None:
    from redsim.config.sweep import load_sweep
    from redsim.result import model_version
    from redsim.sweep.frontier import find_frontier
    from redsim.sweep.runner import run_sweep

    # Runs of an older model are not this model's results: resuming keeps the
    # current ones and reruns the rest, so the old files are dropped first.
    for path in (HERE / s.folder / "runs").glob("*.json"):
        if json.loads(path.read_text()).get("model") != model_version():
            path.unlink()
    spec = load_sweep(SCENARIOS / "sweeps" / s.sweep)
    fn = find_frontier if s.frontier else run_sweep
    fn(spec, HERE / s.folder, jobs=2, resume=True, progress=True, overrides=s.options,
       replications=s.replications)


def sweep_folder(folder: str, figure: bool = False) -> None:
    """Run (resuming) the shipped sweep whose results live in ``folder``; with
    ``figure``, then draw its figure (``FIGURES``)."""
    _sweep(next(s for s in SWEEPS if s.folder == folder))
    if figure and folder in FIGURES:
        sys.path.insert(0, str(HERE))
        __import__(FIGURES[folder]).figure()


def stale_items(force: bool = False) -> list[tuple[str, str]]:
    """(what, why) for every result that needs regenerating."""
    out = []
    for r in RUNS + PERSISTENCE:
        why = "forced" if force else r.stale()
        if why:
            out.append((r.folder, why))
    for s in SWEEPS:
        why = "forced" if force else s.stale()
        if why:
            out.append((s.folder, why))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="list stale results and exit")
    ap.add_argument("--force", action="store_true", help="regenerate everything")
    args = ap.parse_args()
    todo = stale_items(args.force)
    if args.check:
        for what, why in todo:
            print(f"stale: results/{what}: {why}")
        print("results/ is up to date" if not todo else f"{len(todo)} stale")
        return 1 if todo else 0
    stale = {what for what, _ in todo}
    t0 = time.perf_counter()
    for r in RUNS:
        if r.folder in stale:
            print(f"results/{r.folder} ...", flush=True)
            _run_folder(r)
    if stale & {r.folder for r in PERSISTENCE}:
        print("results/s1-fork-thp, results/s2-aof-fsync (results/persistence.py) ...",
              flush=True)
        sys.path.insert(0, str(HERE))
        import persistence

        persistence.main()
    for s in SWEEPS:
        if s.folder in stale:
            print(f"results/{s.folder} ...", flush=True)
            sweep_folder(s.folder, figure=True)
    print(f"done in {time.perf_counter() - t0:.0f} s; regenerated {len(todo)} results")
    return 0


if __name__ == "__main__":
    sys.exit(main())
