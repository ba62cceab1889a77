"""Making local files and folders durable, once for everything that replaces files in place
(:mod:`pipelines.commit`'s journaled publication, :mod:`pipelines.verify.repair`).

A rename or a new file is on disk only once its folder is fsynced; a file's bytes only once the
file is.  What to do when a folder cannot be fsynced differs by caller, so it is a parameter:

* ``strict=True`` (repair): the error is raised; a repair that cannot make a replacement durable
  stops rather than report a file as replaced;
* ``strict=False`` (commit): the fsync is best effort; some file systems (and folders that vanished
  meanwhile) refuse to open or fsync a folder, and commit's journal, not the fsync, is what a later
  run completes from.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import uuid

HASH_CHUNK = 8 << 20


def fsync_dir(path: str, *, strict: bool) -> None:
    """fsync the folder ``path`` so that the names created, renamed or deleted in it persist.
    ``strict``: raise ``OSError`` when the folder cannot be opened or fsynced; else ignore it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        if strict:
            raise
        return
    try:
        os.fsync(fd)
    except OSError:
        if strict:
            raise
    finally:
        os.close(fd)


def sync_tree(path: str) -> None:
    """Make every file below ``path`` durable: one ``syncfs`` of its file system (Linux), else an
    fsync of each file and (best effort) each folder."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        syncfs = None
    if syncfs is not None:
        fd = os.open(path, os.O_RDONLY)
        try:
            if syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    for folder, _, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(folder, strict=False)


def sha256_file(path: str) -> str:
    """sha256 (hex) of a local file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def copy_durably(src: str, dst: str) -> str:
    """Copy ``src`` to ``dst`` (a new file: fails if it exists), fsync it, return its sha256.  The
    folder of ``dst`` is not fsynced: the caller renames or fsyncs it."""
    h = hashlib.sha256()
    with open(src, "rb") as fi, open(dst, "xb") as fo:
        while chunk := fi.read(HASH_CHUNK):
            h.update(chunk)
            fo.write(chunk)
        fo.flush()
        os.fsync(fo.fileno())
    return h.hexdigest()


def replace_json(path: str, value: dict) -> None:
    """Write ``value`` as JSON to ``path`` atomically and durably: a fsynced temporary file beside
    it, ``os.replace``, then a strict fsync of the folder."""
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path), strict=True)
