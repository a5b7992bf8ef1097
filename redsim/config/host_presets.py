"""Cache and TLB sizes of common cloud instance families (``host.preset``).

The miss model (``model/cpu_caches.py``) needs three sizes of the host:
``host.l2`` (a core's L2), ``host.llc`` (the last-level cache Redis's main
thread can use) and ``host.tlb-reach`` (the second-level data TLB's entries ×
4 KB, as Redis 7 maps its heap with 4 KB pages). ``redsim calibrate`` reads
the first two from ``/sys`` on the host it measures; a planner sizing a host
they do not have yet names its family instead::

    host: {preset: aws-r7i}       # or set l2 / llc / tlb-reach yourself

The figures are the processors' published ones (vendor datasheets and
optimisation guides), per core for L2 and per die (Intel, Graviton) or per
core complex (AMD, whose cores see only their CCX's L3) for the LLC. Two
caveats, which a calibration on the real instance removes:

- the LLC of a small instance is shared with its socket's other tenants, so
  the share Redis keeps is smaller than the preset (by an amount no datasheet
  gives: the reference 2-vCPU VM reports a 260 MB L3 it shares);
- the TLB reach assumes 4 KB pages; Graviton instances on a 64 KB-page kernel
  reach 16 × as far.
"""

from __future__ import annotations

from dataclasses import dataclass

MB = 1 << 20
KB = 1 << 10
PAGE = 4 * KB


@dataclass(frozen=True)
class HostCaches:
    """One processor's sizes, bytes: ``l2`` per core, ``llc`` as a core sees it,
    ``tlb_reach`` = second-level data TLB entries × 4 KB; ``cpu``: the
    processor, as its instances report it."""

    cpu: str
    l2: int
    llc: int
    tlb_reach: int


_SKYLAKE_SP = HostCaches("Intel Xeon Platinum 8175M/8275CL (Skylake-SP, Cascade Lake)",
                         1 * MB, 33 * MB, 1536 * PAGE)
_ICE_LAKE = HostCaches("Intel Xeon Platinum 8375C (Ice Lake)", 1280 * KB, 54 * MB, 1536 * PAGE)
_SAPPHIRE = HostCaches("Intel Xeon Platinum 8488C (Sapphire Rapids)", 2 * MB, 105 * MB,
                       2048 * PAGE)
_MILAN = HostCaches("AMD EPYC 7R13 (Zen 3, Milan)", 512 * KB, 32 * MB, 2048 * PAGE)
_GENOA = HostCaches("AMD EPYC 9R14 (Zen 4, Genoa)", 1 * MB, 32 * MB, 3072 * PAGE)
_GRAVITON2 = HostCaches("AWS Graviton2 (Neoverse N1)", 1 * MB, 32 * MB, 1280 * PAGE)
_GRAVITON3 = HostCaches("AWS Graviton3 (Neoverse V1)", 1 * MB, 32 * MB, 2048 * PAGE)
_ALTRA = HostCaches("Ampere Altra (Neoverse N1)", 1 * MB, 32 * MB, 1280 * PAGE)

HOST_PRESETS: dict[str, HostCaches] = {
    # AWS: the c (compute), m (general) and r (memory) families share a processor.
    **{f"aws-{f}5": _SKYLAKE_SP for f in "cmr"},
    **{f"aws-{f}6i": _ICE_LAKE for f in "cmr"},
    **{f"aws-{f}7i": _SAPPHIRE for f in "cmr"},
    **{f"aws-{f}6a": _MILAN for f in "cmr"},
    **{f"aws-{f}7a": _GENOA for f in "cmr"},
    **{f"aws-{f}6g": _GRAVITON2 for f in "cmr"},
    **{f"aws-{f}7g": _GRAVITON3 for f in "cmr"},
    # Google Cloud.
    "gcp-n2": _ICE_LAKE,
    "gcp-c3": _SAPPHIRE,
    "gcp-n2d": _MILAN,
    "gcp-c3d": _GENOA,
    "gcp-t2a": _ALTRA,
    # Azure.
    "azure-dv5": _ICE_LAKE,
    "azure-ev5": _ICE_LAKE,
    "azure-dasv5": _MILAN,
    "azure-easv5": _MILAN,
}
"""``host.preset`` names: ``<cloud>-<family>``, e.g. ``aws-r7g`` (any size)."""

PRESET_FIELDS = (("l2", "l2"), ("llc", "llc"), ("tlb-reach", "tlb_reach"))
"""(YAML key, attribute) of the ``host`` fields a preset fills."""


def fill(host: dict) -> dict:
    """A raw ``host:`` section with its ``preset``'s sizes where it gives none
    of its own (either key spelling); unknown names are left for the schema's
    error, which lists the presets."""
    name = host.get("preset")
    preset = HOST_PRESETS.get(name.strip().lower()) if isinstance(name, str) else None
    if preset is None:
        return host
    out = dict(host)
    for key, attr in PRESET_FIELDS:
        if key not in host and attr not in host:
            out[key] = getattr(preset, attr)
    return out
