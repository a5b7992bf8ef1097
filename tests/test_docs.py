"""The generated reference docs (docs/*.md) match the code and cover all of it.

No simulation runs here: the pages come from the schema's models, the CLI parser
and the model modules' docstrings (read with `ast`, not imported).
"""

from __future__ import annotations

import argparse
import re
import sys
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from redsim import docs
from redsim.cli import build_parser
from redsim.config import schema

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
HINT = "run `python -m redsim.docs` and commit the result"


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return {path.name: text for path, text in docs.generate().items()}


def _committed(name: str) -> str:
    path = DOCS / name
    assert path.is_file(), f"docs/{name} is missing: {HINT}"
    return path.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The body of the `## heading` section of a Markdown page."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no section '## {heading}'"
    return match.group(1)


# ---------------------------------------------------------------------------------
# (a) The committed pages are what the code generates.


@pytest.mark.parametrize("name", sorted(docs.PAGES))
def test_committed_page_is_up_to_date(name: str, generated: dict[str, str]):
    committed = _committed(name)
    if name == "cli.md":
        # argparse's layout changes between Python versions (3.13 merged the
        # metavars of `-j, --jobs JOBS`); compare only under the version the page
        # was generated with, which it names.
        made_with = re.search(r"Python (\d+\.\d+)'s argparse", committed)
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        if made_with and made_with.group(1) != running:
            pytest.skip(f"cli.md was generated with Python {made_with.group(1)}, "
                        f"this is {running}")
    assert committed == generated[name], f"docs/{name} is stale: {HINT}"


def test_check_flags_a_stale_page_and_write_fixes_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(docs, "DOCS_DIR", tmp_path / "docs")
    monkeypatch.setattr(docs, "REPO_ROOT", tmp_path)
    assert docs.main(["--check"]) == 1  # nothing written yet: every page is stale
    assert docs.main([]) == 0
    assert docs.main(["--check"]) == 0
    page = tmp_path / "docs" / "cli.md"
    page.write_text(page.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    capsys.readouterr()
    assert docs.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "docs/cli.md" in err and "python -m redsim.docs" in err
    assert "scenario-reference.md" not in err


def test_generation_is_deterministic(generated: dict[str, str]):
    again = {path.name: text for path, text in docs.generate().items()}
    assert again == generated


# ---------------------------------------------------------------------------------
# (b) Every field of every model reached from Scenario is in the scenario reference.


def _models(annotation: typing.Any) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
    for arg in typing.get_args(annotation):
        yield from _models(arg)


def _all_models() -> list[type[BaseModel]]:
    """Every model reached from Scenario, walked here independently of redsim.docs."""
    seen: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [schema.Scenario]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        hints = typing.get_type_hints(model)  # resolves Disk.fsync's forward reference
        for name in model.model_fields:
            todo.extend(_models(hints[name]))
    return seen


def test_walk_reaches_the_expected_models():
    names = {m.__name__ for m in _all_models()}
    assert {"Scenario", "Server", "Engine", "Cpu", "CommandCost", "Disk", "Host", "Network",
            "ClientGroup", "Pool", "MixEntry", "Keyspace", "ProfileStep", "ScenarioEvent",
            "DurationDist", "SizeDist"} <= names
    assert names == {m.__name__ for m, _ in docs.walk_models()}


@pytest.mark.parametrize("model", _all_models(), ids=lambda m: m.__name__)
def test_every_field_is_in_the_scenario_reference(model: type[BaseModel]):
    section = _section(_committed("scenario-reference.md"), model.__name__)
    if issubclass(model, schema._Dist):
        # A distribution's file keys are `distribution` and those of _DIST_KEYS; its
        # fields are the normalised attributes, listed in a table of their own.
        for key in {"distribution"} | {k for ks in schema._DIST_KEYS.values() for k in ks}:
            assert f"| `{key}` |" in section, f"{model.__name__}: no row for {key}"
        for name in model.model_fields:
            assert f"| `{name}` |" in section, f"{model.__name__}: no row for {name}"
        return
    for name, field in model.model_fields.items():
        key = field.serialization_alias or field.alias or name.replace("_", "-")
        assert re.search(rf"^\| `{re.escape(key)}`", section, re.M), (
            f"{model.__name__}.{name}: no row for YAML key {key!r}: {HINT}")
        if field.description:
            assert " ".join(field.description.split()) in section.replace("\\|", "|")


def test_scenario_reference_has_readable_types():
    text = _committed("scenario-reference.md")
    for noise in ("<class", "typing.", "Annotated", "ForwardRef", "NoneType",
                  "PydanticUndefined", "functools.partial", "<function"):
        assert noise not in text
    assert "| `maxmemory-policy` | `maxmemory-policy` | `server.maxmemory-policy` |" in text
    assert "`clients[].pool.max-size`" in text
    assert "| `maxmemory` | `maxmemory` | `server.maxmemory` | size (bytes; `64mb`) |" in text


# ---------------------------------------------------------------------------------
# (c) Every subcommand is in cli.md; (d) every model module is in model-map.md.


def test_every_subcommand_is_in_cli_md():
    text = _committed("cli.md")
    actions = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    commands = [name for action in actions for name in action.choices]
    assert commands, "the CLI has no subcommands?"
    assert "## redsim\n" in text
    for name in commands:
        assert f"## redsim {name}\n" in text, f"cli.md has no section for {name}: {HINT}"
        assert f"usage: redsim {name} " in text


def test_every_model_module_is_in_model_map():
    text = _committed("model-map.md")
    modules = sorted(p.name for p in (REPO / "redsim" / "model").glob("*.py")
                     if p.name != "__init__.py")
    assert modules
    headings = re.findall(r"^## redsim/model/(\S+\.py)$", text, re.M)
    assert headings == modules, f"model-map.md does not list redsim/model: {HINT}"


def test_model_map_collects_sources_and_deviations():
    text = _committed("model-map.md")
    fork = _section(text, "redsim/model/fork.py")
    # server.c is listed once, with every function fork.py names in it (sorted).
    assert "`src/server.c` (`checkChildrenDone`, `redisFork`," in fork
    assert "Known deviations:" in fork
    # "Sampling deviation:" counts; a "standard deviation" in a parameter does not.
    assert "Sampling deviation" in _section(text, "redsim/model/eviction.py")
    assert "Known deviations" not in _section(text, "redsim/model/heap.py")
    assert "fsync_sigma" not in _section(text, "redsim/model/disk.py")
    # `ae.c` and `src/ae.c` in event_loop.py's docstring are one file.
    loop = _section(text, "redsim/model/event_loop.py")
    assert "`src/ae.c`" in loop and "`ae.c`" not in loop.split("Redis source:")[1].split("\n")[0]


def test_the_module_command_gives_the_same_verdict() -> None:
    # `python -m redsim.docs --check` (what the README tells a contributor to run)
    # agrees with the in-process check, and names each stale page.
    import subprocess

    stale = [p.relative_to(REPO).as_posix() for p in docs.stale(docs.generate())]
    p = subprocess.run([sys.executable, "-m", "redsim.docs", "--check"], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == (1 if stale else 0), p.stderr
    assert [line.removeprefix("stale: ") for line in p.stderr.splitlines()
            if line.startswith("stale: ")] == stale
