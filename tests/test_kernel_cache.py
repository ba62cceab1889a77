"""numba's kernel cache tied to the sources (:mod:`store_format.kernel_cache`): a kernel calling a kernel of another
module sees that module's change (numba alone checks only the compiled function's own file), and a cache beside the
sources still serves a tree moved elsewhere."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import store_format
from store_format.kernel_cache import PREFIX, STAMP, sources_key, use_keyed_cache

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


def _package(where: Path, keyed: bool) -> Path:
    pkg = where / "kpkg"
    pkg.mkdir(parents=True)
    init = "from pathlib import Path\nfrom store_format.kernel_cache import use_keyed_cache\n" \
           "use_keyed_cache(Path(__file__).parent)\n" if keyed else ""
    (pkg / "__init__.py").write_text(init)
    (pkg / "caller.py").write_text(_CALLER)
    (pkg / "callee.py").write_text(_CALLEE.format(n=1))
    return pkg


def _twice(where: Path) -> tuple[int, int]:
    """``twice()`` run in a fresh interpreter, and how many of its signatures came from the cache."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join([str(where), str(ROOT)])
    code = "from kpkg.caller import twice; print(twice(), sum(twice.stats.cache_hits.values()))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         check=True)
    value, hits = out.stdout.split()[-2:]
    return int(value), int(hits)


# numba alone (the control: the same steps load the stale caller) with PIPELINES_FULL_SUITE=1
@pytest.mark.parametrize("keyed", [True, pytest.param(False, marks=pytest.mark.skipif(
    os.environ.get("PIPELINES_FULL_SUITE") != "1", reason="the control: PIPELINES_FULL_SUITE=1"))],
    ids=["keyed", "numba-alone"])
def test_a_kernel_sees_a_change_of_the_kernel_it_calls_in_another_file(tmp_path: Path, keyed: bool) -> None:
    pkg = _package(tmp_path, keyed)
    assert _twice(tmp_path) == (2, 0)
    assert _twice(tmp_path) == (2, 1)   # cached beside the sources
    (pkg / "callee.py").write_text(_CALLEE.format(n=5))   # the callee changes, the caller's file does not
    # keyed: the cache cleared, both compiled afresh; numba alone loads the caller compiled with the old callee
    assert _twice(tmp_path) == ((10, 0) if keyed else (2, 1))
    if keyed:
        assert (pkg / "__pycache__" / STAMP).read_text() == sources_key(pkg)
        assert _twice(tmp_path) == (10, 1)


def test_a_tree_moved_elsewhere_keeps_its_cache(tmp_path: Path) -> None:
    _package(tmp_path / "a", keyed=True)
    assert _twice(tmp_path / "a") == (2, 0)
    shutil.move(tmp_path / "a", tmp_path / "b")   # an archive unpacked at another path (docs/clusters.md)
    assert _twice(tmp_path / "b") == (2, 1)


def test_the_key_follows_every_source_file_and_nothing_else(tmp_path: Path) -> None:
    pkg = _package(tmp_path, keyed=True)
    key = sources_key(pkg)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "x.nbi").write_bytes(b"x")
    (pkg / "notes.txt").write_text("not a source")
    assert sources_key(pkg) == key
    (pkg / "callee.py").write_text(_CALLEE.format(n=1) + "\n")
    assert sources_key(pkg) != key


def test_the_stamp_clears_kernels_of_other_sources_and_a_users_folder_is_keyed(tmp_path: Path,
                                                                               monkeypatch) -> None:  # noqa: ANN001
    import numba

    monkeypatch.setattr(numba.config, "CACHE_DIR", numba.config.CACHE_DIR)   # put back after the test
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    pkg = _package(tmp_path, keyed=False)
    cache = pkg / "__pycache__"
    cache.mkdir()
    (cache / STAMP).write_text("older sources")
    for name in ("k.nbi", "k.1.nbc", "m.cpython-311.pyc"):
        (cache / name).write_bytes(b"x")
    assert use_keyed_cache(pkg) == cache
    assert sorted(p.name for p in cache.iterdir()) == [STAMP, "m.cpython-311.pyc"]
    assert (cache / STAMP).read_text() == sources_key(pkg)
    (cache / "k.nbi").write_bytes(b"compiled under this key")
    assert use_keyed_cache(pkg) == cache and (cache / "k.nbi").exists()   # the same sources: kept
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))   # the user's folder: the parent, nothing removed
    mine = tmp_path / "mine" / (PREFIX + sources_key(pkg))
    assert use_keyed_cache(pkg) == mine and numba.config.CACHE_DIR == str(mine) and (cache / "k.nbi").exists()


def test_store_format_kernels_are_cached_under_its_sources_key() -> None:
    import numba

    pkg = Path(store_format.__file__).parent
    key = sources_key(pkg)
    if os.environ.get("NUMBA_CACHE_DIR"):
        assert Path(numba.config.CACHE_DIR).name == PREFIX + key
    elif os.access(pkg / "__pycache__", os.W_OK):
        assert (pkg / "__pycache__" / STAMP).read_text() == key and not numba.config.CACHE_DIR
