"""The examples a newcomer copies work: every YAML block of the README and the
docs parses and validates (a scenario, or a sweep file), every scenario a
README command names exists, the README's Python block and the package
docstring's example run (issue #17: the README's sweep example was not valid
YAML, the docstring loaded a scenario that does not exist). Every command and
snippet runs in tests/test_doc_examples.py."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest
import yaml

import redsim
from redsim.config import load_scenario
from redsim.config.sweep import load_sweep

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "results" / "README.md", ROOT / "notebooks" / "README.md"]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[tuple[str, int, str]]:
    out = []
    for doc in DOCS:
        if not doc.exists():
            continue
        text = doc.read_text()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                line = text.count("\n", 0, m.start()) + 1
                out.append((doc.relative_to(ROOT).as_posix(), line, m.group(2)))
    return out


YAML = _blocks("yaml")
BASH = _blocks("bash")


def test_the_docs_have_examples_to_check():
    # The guides have a scenario and a sweep example at least (the README's
    # moved to docs/ with the reference sections, issue #42); a refactor that
    # changed the fences would otherwise make the tests below check nothing.
    guides = [b for b in YAML if b[0].startswith("docs/")]
    assert any("axes" in yaml.safe_load(b[2]) for b in guides)
    assert len([b for b in guides if "axes" not in yaml.safe_load(b[2])]) >= 2
    assert len([b for b in BASH if b[0] == "README.md"]) >= 4
    assert len(BASH) >= 20


@pytest.mark.parametrize("doc, line, text", YAML, ids=[f"{d}:{n}" for d, n, _ in YAML])
def test_every_yaml_block_parses_and_validates(doc, line, text):
    data = yaml.safe_load(text)
    assert isinstance(data, dict), f"{doc}:{line}: not a mapping"
    if "axes" in data:
        # A sweep's base is relative to the sweep file; the README's examples
        # live in scenarios/sweeps/ like the shipped ones.
        spec = load_sweep(data, base_dir=ROOT / "scenarios" / "sweeps")
        assert spec.axes
    else:
        load_scenario(data)


SCENARIO_ARG = re.compile(r"^(?:scenarios|results|notebooks)/[\w./-]+\.ya?ml$")


@pytest.mark.parametrize("doc, line, text", BASH, ids=[f"{d}:{n}" for d, n, _ in BASH])
def test_every_file_a_command_names_exists(doc, line, text):
    for cmd in text.splitlines():
        cmd = cmd.split("#", 1)[0].strip()
        if not cmd:
            continue
        try:
            words = shlex.split(cmd)
        except ValueError:
            continue  # a usage line with [ | ] alternatives
        for w in words:
            if SCENARIO_ARG.match(w) and "FILE" not in w:
                assert (ROOT / w).is_file(), f"{doc}:{line}: {w} does not exist"


def _python_block(doc: str, marker: str) -> str:
    for d, _, text in _blocks("python"):
        if d == doc and marker in text:
            return text
    raise AssertionError(f"no python block with {marker!r} in {doc}")


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    code = _python_block("README.md", "redsim.simulate(")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)
    r = ns["r"]
    # The web-cache example serves its offered load: 200 threads at a 10 ms
    # think time offer at most 20,000 req/s; it must serve a good part of it.
    assert 5_000 < r.summary["throughput_rps"] <= 20_000
    assert (tmp_path / "runs" / "my-run" / "summary.json").is_file()


def test_the_readme_regression_example_compiles():
    compile(_python_block("README.md", "def test_"), "README.md", "exec")


def test_the_package_docstring_example_runs(monkeypatch):
    doc = redsim.__doc__
    assert doc is not None
    code = textwrap.dedent(doc.split("::", 1)[1])
    monkeypatch.chdir(ROOT)
    ns: dict = {}
    exec(compile(code, "redsim/__init__.py", "exec"), ns)
    assert ns["result"].summary["latency_p99_s"] > 0
