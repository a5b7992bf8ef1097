"""redsim installs like any other package: from a wheel or an sdist, not only
editable (issue #42: ``redsim/model`` had no ``__init__.py``, so ``packages =
find:`` left the whole kernel out of every wheel, and CI, installing with
``-e``, could not see it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "web-cache.yaml"


def _package_files() -> list[str]:
    """Every file git tracks under ``redsim/`` (code and any data the package
    reads at run time), as paths inside the package tree."""
    out = subprocess.run(["git", "ls-files", "redsim"], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        pytest.skip("not a git checkout: the tracked files are unknown")
    return sorted(out.stdout.split())


def _code_packages() -> set[str]:
    """The dotted name of every tracked folder of ``redsim/`` that holds code."""
    return {str(Path(f).parent).replace("/", ".") for f in _package_files() if f.endswith(".py")}


def test_every_folder_of_code_is_a_package_find_packages_sees():
    # A folder that holds .py files but no __init__.py is silently left out of
    # every wheel by `packages = find:` (what happened to redsim/model).
    folders = _code_packages()
    found = set(find_packages(str(ROOT), include=["redsim", "redsim.*"]))
    assert folders <= found, f"not packages (no __init__.py?): {sorted(folders - found)}"


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist, and the wheel built from it, as `python -m build` makes them
    (in an isolated build environment, as pip and a CI image do)."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


@pytest.mark.slow
def test_the_wheel_and_the_sdist_carry_every_file_of_the_package(dist):
    tracked = set(_package_files())
    wheel = next(dist.glob("redsim-*.whl"))
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("redsim/")}
    assert tracked <= in_wheel, f"missing from the wheel: {sorted(tracked - in_wheel)[:20]}"
    sdist = next(dist.glob("redsim-*.tar.gz"))
    with tarfile.open(sdist) as tf:
        in_sdist = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert tracked <= in_sdist, f"missing from the sdist: {sorted(tracked - in_sdist)[:20]}"


@pytest.mark.slow
def test_a_non_editable_install_of_the_wheel_imports_and_runs(dist, tmp_path):
    # A fresh venv with the wheel installed --no-deps; its dependencies come from
    # this environment's site-packages through a plain path in a .pth file (a
    # path so added is not itself a site dir, so this environment's editable
    # install of redsim stays invisible to the new venv).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "deps-from-test-env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    wheel = next(dist.glob("redsim-*.whl"))
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install",
                          "--no-deps", "--no-index", "--quiet", str(wheel)],
                         capture_output=True, text=True, check=False)
    assert pip.returncode == 0, pip.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    work = tmp_path / "elsewhere"  # not the checkout: `import redsim` must find the wheel's
    work.mkdir()
    packages = sorted(_code_packages())
    code = ("import importlib, redsim, sys\n"
            f"for name in {packages!r}:\n"
            "    importlib.import_module(name)\n"
            "print(redsim.__file__)\n")
    imp = subprocess.run([str(py), "-c", code], cwd=work, env=env, capture_output=True,
                         text=True, check=False)
    assert imp.returncode == 0, imp.stderr[-3000:]
    assert imp.stdout.strip().startswith(site), imp.stdout  # the wheel's copy, not the tree's
    from redsim.model.jit import kernel_compiled

    warm = kernel_compiled()  # this checkout's kernel, in the cache both use
    run = subprocess.run([str(venv / "bin" / "redsim"), "run", str(SCENARIO), "--duration", "10",
                          "--no-plots", "--no-progress", "--out", str(work / "run")],
                         cwd=work, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads((work / "run" / "summary.json").read_text())
    # web-cache.yaml: 200 closed-loop threads thinking 10 ms each, so at most
    # 200 / 10 ms = 20,000 req/s, a little less for the round trips.
    assert summary["duration_s"] == 10, summary
    assert 16_000 < summary["throughput_rps"] < 20_000, summary["throughput_rps"]
    assert "real-time factor" in run.stdout, run.stdout[-2000:]
    # The wheel's copy of the same code finds this checkout's compiled kernel
    # (one cache per code version, whatever the folder it was imported from).
    if warm:
        assert "compiling the simulation kernel" not in run.stderr, run.stderr[-2000:]
