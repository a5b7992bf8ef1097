"""Every shell command and Python snippet in the README and the hand-written guides
in docs/ runs, so that no example can rot (issue #42).

The rules, also in docs/README.md ("The examples are tests"):

- Each document gets a scratch directory, the working directory of its examples:
  ``scenarios/`` holds links to the checkout's scenarios (so a file an example
  writes there stays in the scratch directory), ``tests/``, ``results/`` and
  ``notebooks/`` are links to the checkout's, read only by convention; every
  ``--out`` is redirected under ``out/`` of the scratch directory.
- ``redsim run``, ``sweep`` and ``frontier`` commands run in this process
  (``redsim.cli.main``) as written, with a shorter simulated time appended:
  ``--duration``/``--set duration=`` of :func:`short_duration`, ``--set
  warmup=0``, and for a sweep or frontier ``--replications 1 --jobs 1``.
  ``redsim validate`` runs as written.
- ``python`` blocks run as written, the blocks of one document in order in one
  namespace (as doctest does); ``test_*`` functions a block defines are then
  called with the ``redsim`` fixture (``redsim.testing`` bound to no cache).
- An HTML comment on the line before a block says otherwise:
  ``<!-- example: skip: WHY -->`` (not run: the skip message is WHY),
  ``<!-- example: args: ARGS -->`` (these arguments instead of the shortening),
  ``<!-- example: file: PATH -->`` (a yaml block written to PATH in the scratch
  directory before the document's examples run).
- Any other command fails unless its block is skipped with a reason.

``test_every_example_has_a_way_to_run`` checks the last rule without running
anything and prints how many examples run and how many are skipped; the
examples themselves are ``slow`` (they simulate).
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATED = {"scenario-reference.md", "cli.md", "model-map.md", "kernel-state.md"}
"""docs/ pages written by ``python -m redsim.docs`` (no examples of their own;
``test_the_generated_pages_are_the_ones_redsim_docs_writes`` keeps this list true)."""
DOCS = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")
                             if p.name not in GENERATED)]
LINKED = ("tests", "results", "notebooks")
"""Checkout folders the scratch directory links to as they are."""
RUNNABLE = ("run", "sweep", "frontier", "validate")
"""``redsim`` commands the runner knows how to run (and shorten)."""
MIN_SECONDS = 2.0
"""The shortest simulated time an example is cut to."""

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
DIRECTIVE = re.compile(r"^<!--\s*example:\s*(\w+):\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    directive: str = ""  # skip | args | file, or "" for none
    arg: str = ""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    """The fenced blocks of ``doc``, each with the directive on the line before it."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        d = DIRECTIVE.match(before)
        out.append(Block(doc, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2),
                         d.group(1) if d else "", d.group(2) if d else ""))
    return out


ALL = [b for doc in DOCS for b in blocks(doc)]


def commands(block: Block) -> list[list[str]]:
    """Each command of a bash block as its words: continuation lines joined,
    comments dropped, ``a && b`` two commands."""
    text = block.text.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        cmd: list[str] = []
        for w in [*words, "&&"]:
            if w == "&&":
                if cmd:
                    out.append(cmd)
                cmd = []
            else:
                cmd.append(w)
    return out


def runnable(cmd: list[str]) -> bool:
    return len(cmd) >= 3 and cmd[0] == "redsim" and cmd[1] in RUNNABLE


def problems(block: Block) -> list[str]:
    """Why ``block`` cannot be run as the rules stand (empty: it can, or it is
    skipped with a reason)."""
    where = block.where
    if block.directive and block.directive not in ("skip", "args", "file"):
        return [f"{where}: unknown directive {block.directive!r} (skip, args or file)"]
    if block.directive == "skip":
        return [] if block.arg else [f"{where}: a skip needs its reason"]
    if block.directive == "file" and block.lang not in ("yaml", "text"):
        return [f"{where}: a file: directive goes before a yaml block"]
    if block.directive == "args" and block.lang != "bash":
        return [f"{where}: an args: directive goes before a bash block"]
    if block.lang != "bash":
        return []
    try:
        cmds = commands(block)
    except ValueError as exc:
        return [f"{where}: not shell words ({exc})"]
    return [f"{where}: no way to run `{shlex.join(c)}`: the runner runs redsim "
            f"{', '.join(RUNNABLE)}; say <!-- example: skip: WHY --> before the block"
            for c in cmds if not runnable(c)] or ([] if cmds else [f"{where}: no command"])


# ---------------------------------------------------------------------------------
# The plan, checked without running anything.

def test_the_generated_pages_are_the_ones_redsim_docs_writes():
    from redsim.docs import PAGES

    assert set(PAGES) == GENERATED


def test_every_example_has_a_way_to_run():
    bad = [p for b in ALL for p in problems(b)]
    assert not bad, "\n".join(bad)
    run_cmds = sum(len(commands(b)) for b in ALL if b.lang == "bash" and b.directive != "skip")
    run_py = sum(1 for b in ALL if b.lang == "python" and b.directive != "skip")
    skipped = [b for b in ALL if b.lang in ("bash", "python") and b.directive == "skip"]
    print(f"\ndoc examples: {run_cmds} commands and {run_py} python blocks run, "
          f"{len(skipped)} blocks skipped:")
    for b in skipped:
        print(f"  {b.where}: {b.arg}")
    # A refactor that changed the fences or the directives would otherwise leave
    # the tests below checking nothing.
    assert run_cmds >= 25 and run_py >= 3
    assert len(skipped) <= 8


def test_a_block_without_a_way_to_run_is_an_error():
    block = Block("x.md", 1, "bash", "pip install redsim && redsim run a.yaml\n")
    assert [p for p in problems(block) if "pip install redsim" in p]
    assert problems(Block("x.md", 1, "bash", "pip install redsim\n", "skip", "")) == [
        "x.md:1: a skip needs its reason"]
    assert problems(Block("x.md", 1, "bash", "pip install redsim\n", "skip", "why")) == []
    assert problems(Block("x.md", 1, "python", "1\n", "skp", "why"))


# ---------------------------------------------------------------------------------
# Running them.

_SCRATCH: dict[str, Path] = {}
_NAMESPACES: dict[str, tuple[dict, set[int]]] = {}


@pytest.fixture
def scratch(tmp_path_factory):
    """The scratch directory of a document (made once per session)."""

    def get(doc: str) -> Path:
        if doc not in _SCRATCH:
            d = tmp_path_factory.mktemp("doc-" + re.sub(r"\W", "-", doc))
            (d / "scenarios").mkdir()
            for entry in (ROOT / "scenarios").iterdir():
                (d / "scenarios" / entry.name).symlink_to(entry)
            for name in LINKED:
                (d / name).symlink_to(ROOT / name)
            for b in blocks(doc):
                if b.directive == "file":
                    path = d / b.arg
                    assert path.resolve().is_relative_to(d.resolve()), b.where
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(b.text)
            _SCRATCH[doc] = d
        return _SCRATCH[doc]

    return get


def short_duration(sc) -> float:
    """The simulated time an example runs: ``MIN_SECONDS``, or two sample
    intervals, or a second past the scenario's last scripted event (an event
    must fall inside the run), whichever is longest; never longer than the
    scenario's own."""
    events = [e.at for e in sc.events]
    if isinstance(sc.instances, list):
        events += [e.at for inst in sc.instances for e in inst.events]
    want = max(MIN_SECONDS, 2 * sc.sample_interval, max(events, default=-math.inf) + 1.0)
    return min(sc.duration, want)


def _scenario_of(cmd: list[str]):
    """The scenario a run, sweep or frontier command simulates (its base, for a
    sweep), with the command's ``--set`` overrides."""
    from redsim.config import load_scenario
    from redsim.config.sweep import load_sweep
    from redsim.sweep.grid import point_scenario

    sets = [cmd[i + 1] for i, w in enumerate(cmd[:-1]) if w == "--set"]
    if cmd[1] == "run":
        return load_scenario(cmd[2], overrides=sets)
    return point_scenario(load_sweep(cmd[2]), [], tuple(sets))


def shortened(cmd: list[str], block: Block) -> list[str]:
    """``cmd`` as the runner runs it (see the module's docstring)."""
    out = []
    for i, w in enumerate(cmd):  # every --out under out/ of the scratch directory
        out.append(f"out/{w}" if i and cmd[i - 1] == "--out" else w)
    if cmd[1] == "validate":
        return out
    if block.directive == "args":
        return out + shlex.split(block.arg)
    seconds = f"{short_duration(_scenario_of(cmd)):g}s"
    if cmd[1] == "run":
        return out + ["--duration", seconds, "--set", "warmup=0", "--no-progress"]
    return out + ["--set", f"duration={seconds}", "--set", "warmup=0", "--replications", "1",
                  "--jobs", "1", "--no-progress"]


def _fixtures() -> dict:
    from redsim import testing

    return {"redsim": SimpleNamespace(cache=None, **{
        name: partial(getattr(testing, name), cache=None)
        for name in ("run", "assert_no_burst", "assert_burst", "assert_replicas_keep_up",
                     "headroom")})}


def _run_python(block: Block) -> None:
    """Run ``block`` in its document's namespace, after the blocks before it, and
    call the ``test_*`` functions it defines."""
    ns, done = _NAMESPACES.setdefault(block.doc, ({"__name__": "__doc_example__"}, set()))
    for b in blocks(block.doc):
        if b.lang != "python" or b.directive == "skip" or b.line in done:
            continue
        if b.line > block.line:
            break
        before = set(ns)
        exec(compile(b.text, b.where, "exec"), ns)
        done.add(b.line)
        for name in sorted(set(ns) - before):
            fn = ns[name]
            if name.startswith("test_") and callable(fn):
                fixtures = _fixtures()
                args = fn.__code__.co_varnames[:fn.__code__.co_argcount]
                missing = [a for a in args if a not in fixtures]
                assert not missing, f"{b.where}: {name} asks for {missing}; the runner has redsim"
                fn(*(fixtures[a] for a in args))


def _cases():
    out = []
    for b in ALL:
        if b.lang not in ("bash", "python"):
            continue
        if b.directive == "skip":
            out.append(pytest.param(b, None, id=f"{b.where}-skip"))
        elif b.lang == "python":
            out.append(pytest.param(b, None, id=f"{b.where}-python"))
        else:
            for i, cmd in enumerate(commands(b)):
                out.append(pytest.param(b, cmd, id=f"{b.where}-{i + 1}-{cmd[1]}"))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("block, cmd", _cases())
def test_the_example_runs(block, cmd, scratch, monkeypatch, capsys):
    if block.directive == "skip":
        pytest.skip(f"{block.where}: {block.arg}")
    assert not problems(block), problems(block)
    d = scratch(block.doc)
    monkeypatch.chdir(d)
    if block.lang == "python":
        _run_python(block)
        return
    from redsim import cli

    argv = shortened(cmd, block)
    try:
        code = cli.main(argv[1:])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 0, f"{block.where}: `{shlex.join(argv)}` exited {code}\n{out}\n{err}"


def test_the_shortening_keeps_events_inside_the_run():
    from redsim.config import load_scenario

    sc = load_scenario(ROOT / "scenarios" / "big-key-delete.yaml")
    assert short_duration(sc) == max(e.at for e in sc.events) + 1.0
    sc = load_scenario(ROOT / "scenarios" / "web-cache.yaml")
    assert short_duration(sc) == MIN_SECONDS
    b = Block("x.md", 1, "bash", "")
    got = shortened(["redsim", "run", str(ROOT / "scenarios" / "web-cache.yaml"), "--out",
                     "results/x"], b)
    assert got[3:] == ["--out", "out/results/x", "--duration", "2s", "--set", "warmup=0",
                       "--no-progress"]


def test_the_scratch_directory_keeps_the_checkout_unwritten(scratch):
    d = scratch("docs/testing-api.md")
    assert (d / "scenarios" / "our-cache.yaml").is_file()
    assert not (d / "scenarios" / "our-cache.yaml").is_symlink()
    assert not (ROOT / "scenarios" / "our-cache.yaml").exists()
    assert (d / "scenarios" / "web-cache.yaml").resolve() == ROOT / "scenarios" / "web-cache.yaml"
