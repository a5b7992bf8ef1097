"""``redsim calibrate --scale-only``: one multiplier on the reference host's CPU
costs, from a saturated SET load, in about 5 seconds once the kernel is compiled.

No Redis source: a measurement of ``redis-server``. A full calibration fits
the per-request, per-command and sleeping-poll costs in the model; this
measures one load — redis-benchmark SET, 50 connections, pipeline 16, three
times — runs the model with its default costs (the reference host's) at that
load, saturated, and writes ``engine.cpu.scale`` = measured / modelled CPU
per SET. The load is saturated and pipelined, so the main thread never sleeps
in it: the scale is free of the sleeping-poll accounting (``FitAtBound``'s
usual cause) and of the loopback round trip.

What it cannot do: one number scales every cost alike, so a host whose
system calls are relatively dearer than its command execution (or the
reverse) keeps that difference (the full calibration separates them), and
the dataset is the calibration's ~10 MB (``redsim/calibrate/dataset.py``).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from redsim.calibrate import replay
from redsim.calibrate.measure import CpuLoad, Measurement, Target, cpu_point

LOAD = CpuLoad(50, 16, 600_000)
"""The load measured: saturated, pipelined, no sleeping polls."""

REPS = 3
"""Repetitions of the load; the median is compared."""


def model_us_per_set(version: str, load: CpuLoad = LOAD) -> float:
    """Main-thread CPU per SET of the model with its default costs, under ``load``
    saturated (µs)."""
    res = replay.run_matched(replay.scenario(version), load.clients, load.pipeline, 1.0,
                             saturate=True)
    return replay.cpu_per_command(res)


def measure_scale(t: Target, version: str, reps: int = REPS) -> Measurement:
    """``engine.cpu.scale`` for the server behind ``t``: its median CPU per SET
    under ``LOAD`` over the model's with default costs."""
    real = [cpu_point(t, "SET", LOAD)[0].us_per_request for _ in range(reps)]
    model = model_us_per_set(version)
    med = statistics.median(real)
    spread = statistics.stdev(real) / model if len(real) > 1 else 0.0
    how = (f"redis-benchmark SET (3-byte values), c={LOAD.clients} P={LOAD.pipeline}, "
           f"{reps} repetitions: median {med:.3g} µs of main-thread CPU per SET, against "
           f"{model:.3g} µs in the model (redis-version {version}) with the reference "
           "host's costs, saturated: every CPU cost scaled by their ratio")
    return Measurement("cpu.scale", med / model, "-", spread, reps, how, "engine.cpu.scale",
                       tuple(real))


def write(out: Path, m: Measurement, made: dict[str, Any]) -> dict[str, Any]:
    """The calibration file: the scale, and what it lacks (everything else)."""
    from redsim.calibrate import fragment
    from redsim.calibrate.parts import ALL_PARTS, not_measured

    lacks = not_measured({p: "a scale-only calibration (--scale-only)" for p in ALL_PARTS})
    doc = fragment.build([m], made, None, lacks)
    fragment.write(doc, out)
    from redsim.config.loader import read_calibration

    read_calibration(out)
    return doc


__all__ = ["LOAD", "REPS", "measure_scale", "model_us_per_set", "write"]
