"""Where numba keeps the compiled kernels: a folder keyed by the package's sources.

numba's on-disk cache (``@numba.njit(cache=True)``) checks only the source file of the function it compiled: a
kernel that calls a kernel of another module (``walkkernel.walk_records`` calling ``dispatch`` helpers) is loaded
stale after that other module changed (numba's documented limitation: changes in symbols defined in another file
are not seen).  A checkout updated with ``git pull`` would then rebuild with the old rule.  So the cache lives in a
folder named after a hash of every ``store_format`` source file: any change starts a new folder and every kernel is
compiled afresh once; the folders of older sources in the package's own ``__pycache__`` are removed once unused for
a day.

``NUMBA_CACHE_DIR`` set by the user is kept as the parent folder (nothing removed there: other checkouts may share
it).  Sources inside a zip archive (``spark-submit --py-files``) are left to numba, which keys their cache by the
archive itself.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

__all__ = ["sources_key", "use_keyed_cache"]

PREFIX = "kernels-"
# a folder of older sources is removed once unused this long: a process still running those sources (a notebook's
# kernel) writes a newly compiled signature into it, which fails in a removed folder
STALE_AFTER_S = 24 * 3600


def sources_key(package: Path) -> str:
    """A hash of the package's ``.py`` files (names and bytes), 16 hex digits."""
    h = hashlib.sha256()
    for p in sorted(package.glob("*.py")):
        h.update(p.name.encode())
        h.update(len(p.name).to_bytes(4, "big"))
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def use_keyed_cache(package: Path) -> Path | None:
    """Points numba's cache (``numba.config.CACHE_DIR``) at ``<parent>/kernels-<sources_key>`` before any kernel of
    ``package`` is decorated; the parent: ``NUMBA_CACHE_DIR`` if set, else the package's ``__pycache__`` if writable,
    else numba's user-wide cache folder.  Returns that folder (None: sources not on disk, numba left alone)."""
    if not package.is_dir():
        return None
    import numba
    from numba.misc.appdirs import AppDirs

    key = PREFIX + sources_key(package)
    user = os.environ.get("NUMBA_CACHE_DIR", "")
    if user:
        target = Path(user) / key
    else:
        own = package / "__pycache__"
        parent = own if _writable(own) else Path(AppDirs("numba", appauthor=False).user_cache_dir)
        target = parent / key
        if parent == own:
            stale = time.time() - STALE_AFTER_S
            for old in own.glob(PREFIX + "*"):   # the folders of older sources, not used for a day
                if old.name != key and _last_used(old) < stale:
                    shutil.rmtree(old, ignore_errors=True)
            for old in [*own.glob("*.nbi"), *own.glob("*.nbc")]:   # numba's own in-tree cache, before this
                old.unlink(missing_ok=True)
    numba.config.CACHE_DIR = str(target)   # type: ignore[attr-defined]
    return target


def _last_used(folder: Path) -> float:
    try:
        return max([folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.rglob("*"))])
    except OSError:
        return time.time()


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)
