"""The package's layers: what importing a part of redsim loads.

A scenario is validated (``redsim validate``, an editor's check, a notebook's
``load_scenario``) without the simulation kernel: numba's import alone takes
about a second and its first compile a minute, neither of which checking a
YAML file needs. Each check runs in a fresh interpreter, since this one has
loaded the kernel long ago.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["redsim.config", "redsim.config.loader",
                                    "redsim.config.schema", "redsim.model.trace",
                                    "redsim.model.presets", "redsim.model.commands"])
def test_reading_a_scenario_does_not_load_the_kernel(module):
    code = (f"import sys, {module}; "
            "print(sorted(m for m in sys.modules if m == 'numba' or m == 'redsim.model.jit'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", f"importing {module} loaded {out}"


def test_validating_a_scenario_file_does_not_load_the_kernel(tmp_path):
    # A trace client too: the trace reader runs at validation.
    (tmp_path / "t.txt").write_text("SET k v\nGET k\n")
    (tmp_path / "s.yaml").write_text(
        "name: t\nduration: 1\nclients:\n  - name: a\n    kind: trace\n    trace: t.txt\n")
    code = ("import sys; from redsim.config import load_scenario; "
            f"load_scenario({str(tmp_path / 's.yaml')!r}); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


MODEL_FLOOR = {"redsim.model.state", "redsim.model.jit", "redsim.model.world",
               "redsim.model.histogram"}


def test_the_recorder_sits_below_the_mechanisms():
    # The recorder (redsim/observe) knows windows, not mechanisms: it may import
    # the model's floor (state layout, jit, world access, histogram buckets) and
    # nothing else of it, so mechanisms can import it without a cycle.
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "redsim" / "observe"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith("redsim.model"):
                names = {node.module} if node.module != "redsim.model" else {
                    f"redsim.model.{a.name}" for a in node.names}
                assert names <= MODEL_FLOOR, f"{path.name} imports {sorted(names - MODEL_FLOOR)}"


def test_the_driver_reaches_the_kernel_through_its_facade():
    # simulation.py (SimPy) drives the kernel through redsim/kernel.py: it never
    # indexes the kernel's scalars or imports the state layout, so the layout can
    # change without touching the driver.
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "redsim" / "simulation.py").read_text()
    assert ".F[" not in text and ".I[" not in text
    assert "model import state" not in text and "model.state" not in text
