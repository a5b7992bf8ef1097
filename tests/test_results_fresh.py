"""results/ never goes stale silently.

Each committed run folder records the scenario hash and the model version
(``redsim.result.model_version``) it was made with. Same scenario + seed +
model version gives byte-identical results, so while both match the folder is
fresh by construction. When the model changed, the test reruns the scenario
and compares the headline figures within the tolerances below; when the
scenario changed, it fails: regenerate with ``python results/regenerate.py``.
Sweeps: while every run file carries the current model version they are
fresh; otherwise the two points either side of the burst boundary are rerun.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "results"))

import regenerate  # noqa: E402

from tests.s0_runs import s0_result  # noqa: E402

# After a model change (the case this file is for) it reruns whole S0 runs and
# sweep points: minutes.
pytestmark = pytest.mark.slow

# Headline figures and how far a changed model may move them before results/
# must be regenerated: counts of bursts exactly, phase lengths and memory
# given back within 15 % (the seed's own ranges are wider), latency and
# endpoint figures within 10 %, memory within 2 %.
TOLERANCES = {
    "bursts": ("abs", 0), "phase1_median_s": ("rel", 0.15), "phase2_median_s": ("rel", 0.15),
    "phase3_median_s": ("rel", 0.15), "memory_drop_median_bytes": ("rel", 0.15),
    "used_memory_peak": ("rel", 0.02), "evicted_keys": ("rel", 0.15),
    "latency_max_s": ("rel", 0.10), "trace_pass_mean_s": ("rel", 0.10),
    "latest_fork_usec": ("rel", 0.10), "aof_fsyncs": ("rel", 0.10),
    "used_memory_rss_peak": ("rel", 0.02),
}


def _close(name: str, old, new) -> bool:
    if old is None or new is None:
        return old is None and new is None
    kind, tol = TOLERANCES[name]
    if kind == "abs":
        return abs(new - old) <= tol
    return math.isclose(new, old, rel_tol=tol, abs_tol=1e-12)


@pytest.mark.parametrize("item", regenerate.RUNS + regenerate.PERSISTENCE,
                         ids=lambda r: r.folder)
def test_run_folders_match_their_scenario_and_model(item, s0_cache) -> None:
    why = item.stale()
    assert why in ("", "the model changed"), (
        f"results/{item.folder}: {why}; run python results/regenerate.py")
    committed = json.loads((regenerate.HERE / item.folder / "summary.json").read_text())
    prov = json.loads((regenerate.HERE / item.folder / "provenance.json").read_text())
    assert committed["scenario_hash"] == prov["scenario_hash"]
    if why == "":
        return  # same scenario, seed and model: identical by construction
    from redsim import load_scenario

    path = regenerate.SCENARIOS / item.scenario
    # Shared with the test files that run the same scenario and seed (tests/s0_runs.py).
    fresh = s0_result(s0_cache, load_scenario(path).seed, scenario=path).summary
    off = [f"{k}: committed {committed.get(k)}, now {fresh.get(k)}" for k in TOLERANCES
           if k in committed and not _close(k, committed.get(k), fresh.get(k))]
    assert not off, (f"results/{item.folder} is stale beyond tolerance "
                     f"(python results/regenerate.py): " + "; ".join(off))


def _still_flips(item, cases: list[tuple[list[str], bool, str]], cache) -> None:
    """Rerun S0 (seed 1, 10 simulated minutes: the sweeps' replication 0) with each
    case's overrides and check it bursts, or not, as the committed sweep says."""
    for overrides, burst, what in cases:
        r = s0_result(cache, 1, ["duration=10m", *overrides],
                      scenario=regenerate.SCENARIOS / "gitlab-2022.yaml")
        assert r.summary["burst_detected"] == burst, (
            f"results/{item.folder}: {what} now "
            f"{'bursts' if not burst else 'does not burst'}; python results/regenerate.py")


def _flip(p) -> int:
    """Index of the first point over 0.5 burst probability."""
    return int((p > 0.5).argmax())


def _seed1_burst(item, **where) -> bool:
    """Whether the committed sweep's seed-1 run at the point ``where`` (its
    parameter columns) burst. The rerun is seed 1, so it is compared with that
    run, not with the point's probability: a point of probability 0.5 next to
    the boundary may be the seed-1 run that burst."""
    runs = pd.read_parquet(regenerate.HERE / item.folder / "runs.parquet")
    sel = runs["seed"] == 1
    for col, value in where.items():
        sel &= runs[col] == value
    assert sel.sum() == 1, (item.folder, where)
    return bool(runs.loc[sel, "burst_detected"].iloc[0])


def test_cpu_headroom_sweep_boundary_still_holds(s0_cache) -> None:
    item = regenerate.SWEEPS[0]
    agg = pd.read_csv(regenerate.HERE / item.folder / "aggregate.csv")
    p = agg["burst_probability"].to_numpy()
    assert p[0] == 0 and p[-1] == 1  # a boundary inside the range, as README says
    if item.stale():
        i = _flip(p)
        scales = [agg["cpu-scale"].iloc[j] for j in (i - 1, i)]
        _still_flips(item, [([f"engine.cpu.scale={scale}"],
                             _seed1_burst(item, **{"cpu-scale": scale}), f"scale {scale}")
                            for scale in scales], s0_cache)


def test_ttl_connections_grid_still_flips_where_it_did(s0_cache) -> None:
    item = regenerate.SWEEPS[1]
    agg = pd.read_csv(regenerate.HERE / item.folder / "aggregate.csv")
    first = agg[agg["pool-size"] == agg["pool-size"].iloc[0]].sort_values("ttl")
    p = first["burst_probability"].to_numpy()
    assert p[0] == 0 and p[-1] == 1  # no burst at 20 min, bursts at 2 weeks
    if item.stale():
        i, pool = _flip(p), int(first["pool-size"].iloc[0])
        ttls = [first["ttl"].iloc[j] for j in (i - 1, i)]
        _still_flips(item, [([f"clients[0].pool.max-size={pool}",
                              f"clients[0].mix[1].ttl={ttl}"],
                             _seed1_burst(item, **{"pool-size": pool, "ttl": ttl}),
                             f"TTL {ttl:.0f} s")
                            for ttl in ttls], s0_cache)


def test_frontier_bracket_still_holds(s0_cache) -> None:
    item = regenerate.SWEEPS[2]
    table = pd.read_csv(regenerate.HERE / item.folder / "frontier.csv")
    assert table["y_frontier"].notna().all()
    if item.stale():
        row = table.iloc[0]
        _still_flips(item, [([f"clients[0].pool.max-size={int(row['pool-size'])}",
                              f"clients[0].mix[1].ttl={ttl}"], burst, f"TTL {ttl:.0f} s")
                            for ttl, burst in ((row["y_ok"], False), (row["y_over"], True))],
                    s0_cache)


@pytest.mark.parametrize("item", [s for s in regenerate.SWEEPS if not s.frontier],
                         ids=lambda s: s.folder)
def test_sweep_tables_cover_every_run_and_the_ends_still_agree(item) -> None:
    # Every point x replication has its run file and a row; while the model is
    # unchanged the rows are what the files say. After a model change, the first
    # and last points (replication 0) are rerun: burst or not must agree, and
    # peak used memory within 2 %.
    from redsim.config.sweep import load_sweep
    from redsim.sweep.grid import expand, replication_seed, root_seed

    folder = regenerate.HERE / item.folder
    runs = pd.read_csv(folder / "runs.csv")
    spec = load_sweep(regenerate.SCENARIOS / "sweeps" / item.sweep)
    points = expand(spec, item.options)
    assert len(runs) == len(points) * item.replications
    assert len(list((folder / "runs").glob("*.json"))) >= len(runs)
    assert (runs["status"] == "ok").all()
    if not item.stale():
        return
    from redsim import simulate

    seed = replication_seed(root_seed(spec, points), 0)
    for p in (points[0], points[-1]):
        row = runs[(runs["point"] == p.index) & (runs["replication"] == 0)].iloc[0]
        fresh = simulate(p.scenario, seed=seed, progress=False).summary
        assert fresh["burst_detected"] == bool(row["burst_detected"]), (
            f"results/{item.folder} point {p.labels}: burst changed; regenerate")
        assert _close("used_memory_peak", float(row["used_memory_peak"]),
                      fresh["used_memory_peak"])
