"""numba's kernel cache keyed by the sources (:mod:`store_format.kernel_cache`): a kernel calling a kernel of another
module sees that module's change (numba alone checks only the compiled function's own file)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import store_format
from store_format.kernel_cache import PREFIX, STALE_AFTER_S, sources_key, use_keyed_cache

ROOT = Path(__file__).resolve().parents[1]

_CALLER = """
import numba
from .callee import value

@numba.njit(cache=True)
def twice():
    return 2 * value()
"""
_CALLEE = """
import numba

@numba.njit(cache=True)
def value():
    return {n}
"""


def _package(tmp_path: Path, keyed: bool) -> Path:
    pkg = tmp_path / "kpkg"
    pkg.mkdir()
    init = "from pathlib import Path\nfrom store_format.kernel_cache import use_keyed_cache\n" \
           "use_keyed_cache(Path(__file__).parent)\n" if keyed else ""
    (pkg / "__init__.py").write_text(init)
    (pkg / "caller.py").write_text(_CALLER)
    (pkg / "callee.py").write_text(_CALLEE.format(n=1))
    return pkg


def _twice(tmp_path: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    out = subprocess.run([sys.executable, "-c", "from kpkg.caller import twice; print(twice())"], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return int(out.stdout.split()[-1])


# numba alone (the control: the same steps load the stale caller) with PIPELINES_FULL_SUITE=1
@pytest.mark.parametrize("keyed", [True, pytest.param(False, marks=pytest.mark.skipif(
    os.environ.get("PIPELINES_FULL_SUITE") != "1", reason="the control: PIPELINES_FULL_SUITE=1"))],
    ids=["keyed", "numba-alone"])
def test_a_kernel_sees_a_change_of_the_kernel_it_calls_in_another_file(tmp_path: Path, keyed: bool) -> None:
    pkg = _package(tmp_path, keyed)
    assert _twice(tmp_path) == 2
    cached = list((pkg / "__pycache__").rglob("*.nbi"))
    assert cached, "the first run cached its kernels"
    (pkg / "callee.py").write_text(_CALLEE.format(n=5))   # the callee changes, the caller's file does not
    # keyed: a new cache folder, both compiled afresh; numba alone loads the caller compiled with the old callee
    assert _twice(tmp_path) == (10 if keyed else 2)
    if keyed:   # the new sources' folder beside the old one (removed once unused for a day)
        assert len(list((pkg / "__pycache__" / (PREFIX + sources_key(pkg))).rglob("*.nbi"))) == 2
        assert len(list((pkg / "__pycache__").glob(PREFIX + "*"))) == 2


def test_folders_of_older_sources_go_once_unused_for_a_day(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)   # put back after the test
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    pkg = _package(tmp_path, keyed=False)
    cache = pkg / "__pycache__"
    old, recent = cache / f"{PREFIX}0000", cache / f"{PREFIX}1111"
    for d in (old, recent):
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "k.nbi").write_bytes(b"x")
    (cache / "k.nbi").write_bytes(b"numba's own in-tree cache")
    two_days_ago = time.time() - 2 * STALE_AFTER_S
    for p in (old, old / "sub", old / "sub" / "k.nbi"):
        os.utime(p, (two_days_ago, two_days_ago))
    target = use_keyed_cache(pkg)
    assert target == cache / (PREFIX + sources_key(pkg)) and numba.config.CACHE_DIR == str(target)
    assert not old.exists() and recent.exists() and not (cache / "k.nbi").exists()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))   # the user's folder: the parent, nothing removed
    assert use_keyed_cache(pkg) == tmp_path / "mine" / (PREFIX + sources_key(pkg)) and recent.exists()


def test_the_key_follows_every_source_file_and_nothing_else(tmp_path: Path) -> None:
    pkg = _package(tmp_path, keyed=True)
    key = sources_key(pkg)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "x.nbi").write_bytes(b"x")
    (pkg / "notes.txt").write_text("not a source")
    assert sources_key(pkg) == key
    (pkg / "callee.py").write_text(_CALLEE.format(n=1) + "\n")
    assert sources_key(pkg) != key


def test_store_format_kernels_are_cached_under_its_sources_key() -> None:
    import numba
    from numba.misc.appdirs import AppDirs

    pkg = Path(store_format.__file__).parent
    user = os.environ.get("NUMBA_CACHE_DIR")
    parents = {Path(user)} if user else {pkg / "__pycache__", Path(AppDirs("numba", appauthor=False).user_cache_dir)}
    cache = Path(numba.config.CACHE_DIR)
    assert cache.name == PREFIX + sources_key(pkg) and cache.parent in parents, (cache, parents)
