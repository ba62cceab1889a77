"""``repair`` of a RocksDB consume queue (5.x ``storeType=defaultRocksDB``): the database in
``consumequeue/`` is replaced as a whole.

RocksDB's files are not deterministic and a database is one unit (its ``MANIFEST`` names its table
files), so no file of it can be replaced alone: when any queue's entries differ from the rebuild's
(:mod:`.rocksdb_compare`), the rebuilt database takes the place of the store's.  The broker opens the
rebuilt database and answers every queue as on its own (``tests/test_rocksdb_cq_broker.py``), which
is what makes the swap a repair.

The swap keeps the store's rule "each file old or new": the old database is copied to the backup
folder first, the new one is copied (fsynced) beside it under a hidden name, and the two folders are
exchanged in one step (Linux ``renameat2(RENAME_EXCHANGE)``); where the file system cannot exchange
folders, two renames are used, and the short moment between them (no ``consumequeue/``) is named
in the manifest's notes.  A staged or retired folder left by an interrupted repair
(``.consumequeue.repair-<token>.tmp``) is deleted by the next repair.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import re
import shutil
import uuid

from ..durable import copy_durably, fsync_dir, sha256_file

__all__ = ["LEFTOVER_RE", "copy_tree_durably", "remove_leftovers", "staged_name", "swap_folders", "tree_sha256"]

LEFTOVER_RE = re.compile(r"^\.consumequeue\.repair-[0-9a-f]{12}\.tmp$")
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def tree_sha256(root: str) -> str:
    """One sha256 over a folder's files: each file's relative path and sha256, in path order."""
    h = hashlib.sha256()
    for rel in sorted(_files(root)):
        h.update(f"{rel}\0{sha256_file(os.path.join(root, rel))}\n".encode())
    return h.hexdigest()


def copy_tree_durably(src: str, dst: str) -> str:
    """Copy the folder ``src`` to ``dst`` (which must not exist), every file and folder fsynced;
    returns :func:`tree_sha256` of the copy."""
    os.makedirs(dst)
    h = hashlib.sha256()
    for rel in sorted(_files(src)):
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        digest = copy_durably(os.path.join(src, rel), os.path.join(dst, rel))
        h.update(f"{rel}\0{digest}\n".encode())
    for folder, _dirs, _names in os.walk(dst):
        fsync_dir(folder, strict=True)
    return h.hexdigest()


def swap_folders(staged: str, target: str) -> bool:
    """Put the folder ``staged`` at ``target`` and the old ``target`` at ``staged``'s name, in one
    exchange where the file system allows it (returns True), else by two renames (False); the
    parent folder is fsynced.  Both must be in the same folder."""
    parent = os.path.dirname(target)
    exchanged = _exchange(staged, target)
    if not exchanged:
        retired = f"{staged}.old"
        os.rename(target, retired)
        os.rename(staged, target)
        os.rename(retired, staged)
    fsync_dir(parent, strict=True)
    return exchanged


def remove_leftovers(store_root: str) -> list[str]:
    """Delete the staged or retired databases an interrupted repair left in the store root."""
    gone = []
    for name in sorted(os.listdir(store_root)):
        if LEFTOVER_RE.match(name) or (name.endswith(".tmp.old") and LEFTOVER_RE.match(name[:-4])):
            shutil.rmtree(os.path.join(store_root, name), ignore_errors=True)
            gone.append(name)
    return gone


def staged_name(store_root: str, folder: str) -> str:
    """A hidden name beside ``folder`` for the staged database."""
    return os.path.join(store_root, f".{folder}.repair-{uuid.uuid4().hex[:12]}.tmp")


def _exchange(a: str, b: str) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _files(root: str) -> list[str]:
    out = []
    for folder, _dirs, names in os.walk(root):
        out += [os.path.relpath(os.path.join(folder, n), root) for n in names]
    return out
