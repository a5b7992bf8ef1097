"""pytest plugin (auto-loaded once redsim is installed): the ``redsim`` fixture.

```python
def test_no_burst_at_peak(redsim):
    redsim.assert_no_burst("scenarios/our-cache.yaml", set=["clients[0].rate=40k/s"])
```

The fixture offers ``run``, ``assert_no_burst``, ``assert_burst``,
``assert_replicas_keep_up`` and ``headroom`` from ``redsim.testing`` with a
run cache in pytest's cache directory (``.pytest_cache/d/redsim``): runs are
keyed by scenario hash, seed and model version, so a test suite re-run after
an unrelated change reads them from disk. ``pytest --redsim-no-cache`` runs everything afresh;
``pytest --cache-clear`` empties it.
"""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("redsim")
    group.addoption("--redsim-no-cache", action="store_true",
                    help="simulate every redsim run instead of reading cached ones")


@pytest.fixture(scope="session")
def redsim_cache(request: pytest.FixtureRequest):
    """The session's ``redsim.testing.RunCache`` (None with --redsim-no-cache)."""
    from redsim.testing import RunCache

    if request.config.getoption("--redsim-no-cache"):
        return None
    return RunCache(request.config.cache.mkdir("redsim"))


@pytest.fixture
def redsim(redsim_cache):
    """``redsim.testing``'s assertions bound to the session's run cache."""
    from redsim import testing

    bound = {name: partial(getattr(testing, name), cache=redsim_cache)
             for name in ("run", "assert_no_burst", "assert_burst", "assert_replicas_keep_up",
                          "headroom")}
    return SimpleNamespace(cache=redsim_cache, **bound)
