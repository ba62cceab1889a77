"""Readers of the files a DLedger crash broker case writes, shared by the inside-entry test modules: a consume queue's
20-byte units (``ConsumeQueue``: commitlog offset, size, tags code), a consume queue ext file's units
(``ConsumeQueueExt.CqExtUnit``) and a record's bytes in the last DLedger data file of the store the restart found."""
from __future__ import annotations

import struct
from pathlib import Path


def cq_unit(data: bytes, at: int) -> tuple[int, int, int]:
    """The consume queue unit at byte ``at``: commitlog offset, size, tags code."""
    return struct.unpack(">qiq", data[at:at + 20])


def first_units(data: bytes, count: int) -> list[tuple[int, int]]:
    """The first ``count`` consume queue units of ``data``: commitlog offset, size (tags codes asserted 0)."""
    assert all(data[k + 12:k + 20] == bytes(8) for k in range(0, count * 20, 20)), data[:count * 20].hex()
    return [cq_unit(data, k)[:2] for k in range(0, count * 20, 20)]


def ext_units(data: bytes) -> list[bytes]:
    """A consume queue ext file's units (a 2-byte size, then the rest) up to the first zero size."""
    out, at = [], 0
    while at + 2 <= len(data) and (size := int.from_bytes(data[at:at + 2], "big")):
        out.append(data[at:at + size])
        at += size
    return out


def last_data_bytes(src: Path, offset: int, n: int) -> bytes:
    """``n`` bytes of the last data file of the store the restart found (``before/``), from commitlog offset
    ``offset`` on."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[-1].open("rb") as f:
        f.seek(offset - int(data[-1].name))
        return f.read(n)
