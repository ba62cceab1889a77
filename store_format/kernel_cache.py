"""numba's compiled kernels, kept only while every source they may call is unchanged.

numba's on-disk cache (``@numba.njit(cache=True)``) checks only the source file of the function it compiled: a
kernel that calls a kernel of another module (``walkkernel.walk_records`` calling ``dispatch`` helpers) is loaded
stale after that other module changed (numba's documented limitation: changes in symbols defined in another file
are not seen).  A checkout updated with ``git pull`` would then rebuild with the old rule.  So the cache is tied to
a hash of every ``store_format`` source file (:func:`sources_key`):

* beside the sources (numba's own place, ``__pycache__``, which a tree moved elsewhere keeps using): a stamp file
  there holds the key its kernels were compiled under; another key clears them first (each is compiled afresh once);
* ``NUMBA_CACHE_DIR`` set by the user, or no writable ``__pycache__`` (numba's user-wide folder then): a folder
  ``kernels-<key>`` inside it (nothing removed there: other checkouts may share it).

Sources inside a zip archive (``spark-submit --py-files``) are left to numba, which keys their cache by the archive
itself.  (A process still running older sources that compiles a new signature after the clearing writes it beside
the new ones: kernels here are compiled for fixed signatures, once per process, so that needs a process started
before the update that had not yet run them.)
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["sources_key", "use_keyed_cache"]

PREFIX = "kernels-"
STAMP = "kernels.key"


def sources_key(package: Path) -> str:
    """A hash of the package's ``.py`` files (names and bytes), 16 hex digits."""
    h = hashlib.sha256()
    for p in sorted(package.glob("*.py")):
        h.update(p.name.encode())
        h.update(len(p.name).to_bytes(4, "big"))
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def use_keyed_cache(package: Path) -> Path | None:
    """Ties numba's cache of ``package``'s kernels to :func:`sources_key` before any of them is decorated (module
    docstring) and returns the folder the kernels are cached in (None: sources not on disk, numba left alone)."""
    if not package.is_dir():
        return None
    key = sources_key(package)
    user = os.environ.get("NUMBA_CACHE_DIR", "")
    own = package / "__pycache__"
    if not user and _writable(own):
        stamp = own / STAMP
        if _read(stamp) != key:
            for old in [*own.glob("*.nbi"), *own.glob("*.nbc")]:
                old.unlink(missing_ok=True)
            tmp = own / f"{STAMP}.{os.getpid()}"
            tmp.write_text(key)
            tmp.replace(stamp)
        return own
    import numba
    from numba.misc.appdirs import AppDirs

    parent = Path(user) if user else Path(AppDirs("numba", appauthor=False).user_cache_dir)
    numba.config.CACHE_DIR = str(parent / (PREFIX + key))   # type: ignore[attr-defined]
    return parent / (PREFIX + key)


def _read(stamp: Path) -> str:
    try:
        return stamp.read_text()
    except OSError:
        return ""


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)
