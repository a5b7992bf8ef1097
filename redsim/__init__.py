"""redsim — a discrete-event simulator of the Redis main thread.

From Python::

    import redsim
    scenario = redsim.load_scenario("scenarios/web-cache.yaml")
    result = redsim.simulate(scenario, seed=1)
    result.summary["latency_p99_s"], result.timeseries.head()
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "load_scenario": ("redsim.config", "load_scenario"),
    "ScenarioError": ("redsim.config", "ScenarioError"),
    "simulate": ("redsim.driver", "simulate"),
    "Result": ("redsim.result", "Result"),
}


def __getattr__(name: str):
    # Imported on first use so `import redsim` stays cheap and submodules load alone.
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'redsim' has no attribute {name!r}")


__all__ = ["load_scenario", "simulate", "Result", "ScenarioError", "__version__"]
