"""Real Redis servers: starting a throw-away one, talking to one, loading one.

This package is the link between the model and a running ``redis-server``:
``server.py`` starts and stops a local server on 127.0.0.1 (a free port, a
throw-away ``--dir``, stopped by its PID), ``probe.py`` reads what a server
reports (``INFO``, main-thread CPU), ``load.py`` drives it (redis-benchmark
from Debian's ``redis-tools``, or a small redis-py generator), and ``guard.py``
undoes what a killed calibration left on a server redsim did not start (its
record, its guardian process, ``redsim calibrate --cleanup``). The calibration
(``redsim.calibrate``) and validation (``redsim.validation``) packages are built
on it; the model never imports it.
"""

from redsim.live.server import RedisNotFound, RedisServer, find_redis

__all__ = ["RedisNotFound", "RedisServer", "find_redis"]
