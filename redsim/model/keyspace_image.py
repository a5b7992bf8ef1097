"""A preloaded keyspace kept in memory, to start other runs from.

No Redis source: the simulator's own build. Building S0's keyspace (27 M keys:
``preload.plan`` drawing them, ``db.preload`` inserting them) takes most of a
run's set-up, and the points of a sweep that differ only in connections, CPU
costs, fsync or client behaviour build the very same keyspace. An image is the
state ``preload.start`` leaves: every array and scalar the preload changed, taken
once; a later run with the same key copies it in instead of planning and
inserting again, and runs byte-identically (``tests/test_keyspace_image.py``).

The key is ``config.loader.keyspace_hash`` (the driver computes it and
``build.build_world`` files the image under it): the scenario without the
fields declared not to shape the keyspace (``loader.NOT_KEYSPACE``, from
``Directive(keyspace=False)`` and ``NotKeyspace()`` in ``config/schema/``),
those that no step before ``preload.start`` uses in shaping the keys. Every other
field is part of the key, so a field added later is shared by no run until
it is declared so, and a field declared so wrongly shows in the test. What a
different connection count changes, the spare capacity of the key table and of
the allocator's slab arrays, is made up at restore by the growth the kernel uses
at run time (``db.grow_write_once``, ``arena.grow``), which changes nothing in
a run (``test_write_once.py``, ``test_nonfull.py``); a larger spare is kept.

As a guard, the image also keeps the values every array and scalar it changes
had before the preload: a run whose own values differ there (a mechanism that
came to set them from a field declared not to shape the keyspace) builds
afresh. The guard does not see what the preload only reads: a field that
changes how keys are costed or placed must not be declared so.

An image costs memory: the key table and what the preload allocated, ~2.6 GB
for S0, held by each process that keeps one (``KeyspaceImages.keep``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from redsim.model import nonfull
from redsim.model import state as S
from redsim.model.db import grown_free_stack


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).view(np.uint8)).hexdigest()


GROWN = ("ks_", "sb_")
"""Arrays whose length is a capacity (key rows, slab ids): an image taken at
a smaller one is restored into a run's larger arrays as the kernel's growth
would make them (``db.grow_write_once``, ``arena.grow``)."""


@dataclass
class KeyspaceImage:
    """What ``preload.start`` changed in one built world, and what
    ``preload.configure`` derived from the preload plan (``sizes``: the plans
    without their per-key arrays, the slab demand)."""

    key: str
    sizes: dict[str, Any]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    before: dict[str, str] = field(default_factory=dict)  # digests before the preload
    scalars: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=dict)  # "I"/"F": (indices, before, after)

    @property
    def nbytes(self) -> int:
        """Bytes the image holds."""
        return sum(a.nbytes for a in self.arrays.values())


class Snapshot:
    """A world's state before ``preload.start``, to see what it changes: copies of
    its scalars and of its arrays but the key table's (every key row starts
    absent, so the preload changes all of it)."""

    def __init__(self, w) -> None:
        self.copies = {n: np.array(getattr(w, n), copy=True) for n in w._fields
                       if not n.startswith("ks_")}

    def image(self, w, key: str, sizes: dict[str, Any]) -> KeyspaceImage:
        """The image of what changed since the snapshot."""
        img = KeyspaceImage(key, sizes)
        for name in w._fields:
            now = getattr(w, name)
            if name in ("I", "F"):
                old = self.copies[name]
                idx = np.flatnonzero(~((now == old) | (np.isnan(now) & np.isnan(old)))
                                     if now.dtype.kind == "f" else now != old)
                img.scalars[name] = (idx, old[idx].copy(), now[idx].copy())
            elif name.startswith("ks_"):
                img.arrays[name] = np.array(now, copy=True)
            elif not np.array_equal(now, self.copies[name], equal_nan=True):
                img.arrays[name] = np.array(now, copy=True)
                img.before[name] = _digest(self.copies[name])
        return img


def fits(img: KeyspaceImage, w) -> bool:
    """Whether world ``w``, built up to ``preload.start``, is where the image was
    taken from: the same values where the image changes them, and capacities
    no smaller than the image's (a larger one is grown into)."""
    for name, (idx, before, _after) in img.scalars.items():
        if not np.array_equal(getattr(w, name)[idx], before, equal_nan=True):
            return False
    for name, a in img.arrays.items():
        own = getattr(w, name)
        if name.startswith(GROWN):
            if len(own) < len(a):
                return False
            # The bit sets' layout follows the capacity; the rest is a prefix.
            if name in img.before and name != "sb_nonfull_bits" and \
                    _digest(own[:len(a)]) != img.before[name]:
                return False
        elif own.shape != a.shape or _digest(own) != img.before[name]:
            return False
    return True


def restore(img: KeyspaceImage, w) -> None:
    """Give world ``w`` (for which ``fits``) the image's keyspace, in place.
    Where ``w``'s capacity is larger, its extra key rows go under the free
    ones (``db.grow_write_once``) and the slabs' non-full bit sets are laid
    out for its slab ids (``arena.grow``)."""
    free_rows = len(w.ks_free)
    for name, (idx, _before, after) in img.scalars.items():
        getattr(w, name)[idx] = after
    for name, a in img.arrays.items():
        if name not in ("ks_free", "sb_nonfull_bits"):
            getattr(w, name)[:len(a)] = a  # a longer array's tail stays as built
    free = img.arrays.get("ks_free")
    if free is not None:
        w.I[S.KS_FREE_N] = grown_free_stack(w.ks_free, free, int(w.I[S.KS_FREE_N]),
                                            len(img.arrays["ks_cost"]), free_rows - len(free))
    bits = img.arrays.get("sb_nonfull_bits")
    if bits is not None:
        w.sb_nonfull_bits[:] = bits if len(bits) == len(w.sb_nonfull_bits) else \
            nonfull.build(w.sb_bin, w.sb_nfree, w.al_cur, len(w.sb_bin))


class KeyspaceImages:
    """The images one process keeps (a sweep's worker): at most ``keep``, the
    latest used first; ``hits`` and ``misses`` count the runs that found an
    image and those that built their keyspace."""

    def __init__(self, keep: int = 1) -> None:
        self.keep = keep
        self._images: dict[str, KeyspaceImage] = {}
        self.hits = self.misses = 0

    def get(self, key: str) -> KeyspaceImage | None:
        img = self._images.pop(key, None)
        if img is not None:
            self._images[key] = img  # the latest used last
        return img

    def put(self, img: KeyspaceImage) -> None:
        self._images.pop(img.key, None)
        self._images[img.key] = img
        while len(self._images) > self.keep:
            self._images.pop(next(iter(self._images)))

    def __len__(self) -> int:
        return len(self._images)
