"""Capacity regression tests for a Redis cache: copy this file into your repository.

Each test takes a scenario file (here GitLab's cache, seed S0 — put yours),
changes the one thing the test is about, and asserts burst or no burst. The
``redsim`` fixture comes with redsim (a pytest plugin) and caches runs in
``.pytest_cache``, so a test whose scenario did not change reads its run from
disk. A failure prints the run's phase table and the figure that crossed.
"""

from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "gitlab-2022.yaml"
FIVE_MINUTES = ["duration=300s"]  # seed 1 bursts at ~2 min; keeps CI quick


def test_todays_deployment_bursts_within_five_minutes(redsim):
    # The known problem, pinned: if this starts failing, the model (or the
    # scenario) no longer shows the cycle the production graphs show.
    redsim.assert_burst(SCENARIO, set=FIVE_MINUTES, seeds=[1], within=300)


def test_a_twice_faster_core_would_not_burst(redsim):
    # The what-if that justifies the upgrade: every main-thread cost halved.
    redsim.assert_no_burst(SCENARIO, set=[*FIVE_MINUTES, "engine.cpu.scale=0.5"], seeds=[1])
