"""Write the traces of seed S2's two endpoints (``../../shared/seeds/002_*``).

``/get_cache`` (the case's Flask app, as the seed lists its code)::

    for key in redis_client.scan_iter("uuid:*"):      # SCAN cursor MATCH uuid:*
        value = redis_client.get(key)                 # GET uuid:<36-char uuid>
        if value == type_name:
            redis_client.sadd(type_name, key[5:])     # SADD good <uuid>
    data = list(redis_client.smembers(type_name))     # SMEMBERS good
    redis_client.delete(type_name)                    # DEL good

over 5,000 ``uuid:`` keys (``/init/5000``) whose values are good / bad / normal,
1,677 of them ``good`` (the seed's reply: ``"count":1677``). ``scan_iter``
sends SCAN with Redis's default COUNT 10, which returns ~10 keys a call, so
~500 SCANs. ``/get_cache_data`` is the same loop without the SADDs, the
SMEMBERS and the DEL (the seed's fixed endpoint).

Run ``python scenarios/traces/make_get_cache.py``; the output is fixed by the
seed below, so the committed files are reproducible.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

KEYS = 5000
GOOD = 1677
SCAN_COUNT = 10
SEED = 2  # seed S2


def _keys(rng: np.random.Generator) -> tuple[list[str], set[int]]:
    ids = [str(uuid.UUID(bytes=rng.bytes(16), version=1)) for _ in range(KEYS)]
    good = set(rng.choice(KEYS, GOOD, replace=False).tolist())
    return ids, good


def trace(with_sadd: bool) -> str:
    """The endpoint's command sequence, one redis-cli line per command."""
    rng = np.random.default_rng(SEED)
    ids, good = _keys(rng)
    name = "get_cache" if with_sadd else "get_cache_data"
    lines = [f"# seed S2: one call of /{name} over {KEYS} uuid: keys ({GOOD} good);"
             " written by make_get_cache.py"]
    cursor = 0
    for start in range(0, KEYS, SCAN_COUNT):
        lines.append(f"SCAN {cursor} MATCH uuid:*")
        cursor = start + SCAN_COUNT if start + SCAN_COUNT < KEYS else 0
        for i in range(start, min(start + SCAN_COUNT, KEYS)):
            lines.append(f"GET uuid:{ids[i]}")
            if with_sadd and i in good:
                lines.append(f"SADD good {ids[i]}")
    if with_sadd:
        lines.append("SMEMBERS good")
        lines.append("DEL good")
    return "\n".join(lines) + "\n"


def main() -> None:
    here = Path(__file__).resolve().parent
    (here / "get_cache.trace").write_text(trace(True))
    (here / "get_cache_data.trace").write_text(trace(False))


if __name__ == "__main__":
    main()
