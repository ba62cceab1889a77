"""The README's and docs' examples run as written.

Fenced blocks marked ``sh`` or ``python`` are examples a reader can paste; plain blocks (no language,
or ``text``) are synopses with placeholders and are not run.  The documents run in one scratch folder
in reading order (README first, then ``docs/`` by name), so a document may use what the README's
session made (``demo/store``, ``demo/out``); ``../shared/golden`` is the golden stores beside the
repository, as from a checkout.  A ``sh`` line ending in ``# exit N`` must exit with N, every other
line with 0.  ``python`` on a line is this interpreter's venv, as after ``make``.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GOLDEN_DIR, REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spark]

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.S | re.M)
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
DOCUMENTS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def runnable_blocks(path: Path) -> list[tuple[str, str]]:
    """``(language, text)`` of the blocks of one document that are meant to be run."""
    return [(lang, text) for lang, text in _FENCE.findall(path.read_text(encoding="utf-8"))
            if lang in ("sh", "python")]


def _commands(block: str) -> list[tuple[str, int]]:
    """A ``sh`` block's commands with the exit code each must give (continuation lines joined)."""
    out: list[tuple[str, int]] = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        expected = _EXIT.search(line)
        out.append((line, int(expected.group(1)) if expected else 0))
    return out


def test_the_documents_have_runnable_examples() -> None:
    """The README shows a worked session; a document cannot lose all its examples unnoticed."""
    assert runnable_blocks(REPO_ROOT / "README.md"), "README.md has no sh/python example"
    assert sum(len(runnable_blocks(p)) for p in DOCUMENTS) >= 5


def test_every_example_runs_as_written(tmp_path: Path) -> None:
    if not GOLDEN_DIR.is_dir():
        pytest.skip(f"no golden stores at {GOLDEN_DIR}: the docs' examples use ../shared/golden")
    work = tmp_path / "checkout"
    work.mkdir()
    (tmp_path / "shared").symlink_to(GOLDEN_DIR.parent)
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    failures = []
    for doc in DOCUMENTS:
        for lang, block in runnable_blocks(doc):
            if lang == "python":
                steps = [(f"{shlex.quote(sys.executable)} -c {shlex.quote(block)}", 0)]
            else:
                steps = _commands(block)
            for command, expected in steps:
                done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                                      text=True, timeout=600)
                if done.returncode != expected:
                    failures.append(f"{doc.relative_to(REPO_ROOT)}: `{command[:160]}` exited {done.returncode}, "
                                    f"expected {expected}:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    assert not failures, "\n\n".join(failures)
