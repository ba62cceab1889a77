"""The recovery's ``forceVerifyPropCRC`` check (:mod:`store_format.propcrc`) on small stores written here.

Expected values follow 5.3.3/5.5.1 ``CommitLog.checkMessageAndReturnSize`` and ``MessageDecoder.createCrc32``
(the writer ``DefaultAppendMessageCallback`` with ``enabledAppendPropCRC=true``): the record ends with the
property ``__CRC32#`` 0x01, ten digits least significant first, 0x02; its value is
``java.util.zip.CRC32`` (here ``zlib.crc32``) of the record but those 20 bytes, sign bit cleared.  The same
rules against the broker's own restart: :mod:`test_restart_propcrc_broker`.
"""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from store_format.config import load_broker_config
from store_format.corruption import flip_body_byte
from store_format.propcrc import expected_prop_crc, prop_crc_check
from store_format.recovery import plan_recovery
from store_format.store import open_store
from store_format.writer import CommitLogWriter

SEGMENT = 8192
N = 60


def _conf(version: str, extra: str = ""):
    return load_broker_config(f"mappedFileSizeCommitLog={SEGMENT}\nbrokerVersion={version}\n{extra}")


def _digits(crc: int) -> bytes:
    """``MessageDecoder.createCrc32``'s ten digits: least significant first."""
    out = []
    for _ in range(10):
        out.append(ord("0") + crc % 10)
        crc //= 10
    return bytes(out)


def _seal(root: Path, offset: int) -> None:
    """Writes the CRC property of the record at ``offset`` over its bytes as they are now."""
    seg = root / "commitlog" / f"{offset - offset % SEGMENT:020d}"
    data = bytearray(seg.read_bytes())
    p = offset % SEGMENT
    total = int.from_bytes(data[p:p + 4], "big")
    assert data[p + total - 20:p + total - 11] == b"__CRC32#\x01"
    data[p + total - 11:p + total - 1] = _digits(zlib.crc32(bytes(data[p:p + total - 20])) & 0x7FFFFFFF)
    seg.write_bytes(bytes(data))


def _write(root: Path, with_property: bool = True) -> list[int]:
    offsets = []
    with CommitLogWriter(str(root), _conf("5")) as w:
        for i in range(N):
            props = f"KEYS\x01k{i}\x02".encode() + (b"__CRC32#\x010000000000\x02" if with_property else b"")
            offsets.append(w.append("T", i % 2, body=f"body-{i}".encode() * 3, properties=props,
                                    store_timestamp=1_700_000_000_000 + i)[0])
    if with_property:
        for off in offsets:
            _seal(root, off)
    return offsets


def _flip(root: Path, at: int) -> None:
    seg = root / "commitlog" / f"{at - at % SEGMENT:020d}"
    data = bytearray(seg.read_bytes())
    data[at % SEGMENT] ^= 0xFF
    seg.write_bytes(bytes(data))


def _plan(root: Path, version: str = "5", extra: str = "forceVerifyPropCRC=true", **kw):
    return plan_recovery(open_store(str(root), _conf(version)), _conf(version, extra), abnormal=False, **kw)


def test_sealed_store_is_kept_whole(tmp_path: Path) -> None:
    _write(tmp_path)
    end = _plan(tmp_path, extra="").process_offset
    plan = _plan(tmp_path)
    assert plan.process_offset == end and plan.stop_kind != "crc_mismatch"


def test_a_head_byte_fails_the_property_not_the_body(tmp_path: Path) -> None:
    """The lowest bornTimestamp byte (record position 47): no body CRC covers it, the property does."""
    offsets = _write(tmp_path)
    end = _plan(tmp_path).process_offset
    _flip(tmp_path, offsets[40] + 47)
    assert _plan(tmp_path, extra="").process_offset == end
    plan = _plan(tmp_path)
    assert (plan.process_offset, plan.stop_kind) == (offsets[40], "crc_mismatch")
    assert "CRC property mismatch" in plan.reason
    assert _plan(tmp_path, check_crc=False).process_offset == end     # checkCRCOnRecover=false: no check at all
    assert _plan(tmp_path, version="4").process_offset == end         # 4.9.8 has no such setting


def test_a_body_byte_with_the_property_sealed_again_is_accepted(tmp_path: Path) -> None:
    offsets = _write(tmp_path)
    end = _plan(tmp_path).process_offset
    flip_body_byte(str(tmp_path), offsets[40])
    _seal(tmp_path, offsets[40])
    assert _plan(tmp_path, extra="").process_offset == offsets[40]     # the body CRC fails
    assert _plan(tmp_path).process_offset == end                       # not checked with forceVerifyPropCRC


def test_a_store_without_the_property_ends_at_its_first_record(tmp_path: Path) -> None:
    """5.x normal recovery with the consume queues deleted walks from the first segment: its first record
    fails ("not found CRC in properties"), the commitlog is cut at offset 0."""
    _write(tmp_path, with_property=False)
    plan = _plan(tmp_path)
    assert (plan.process_offset, plan.stop_kind) == (0, "crc_mismatch") and "no __CRC32# property" in plan.reason
    assert plan.deleted_segments == plan.segments - 1
    assert _plan(tmp_path, version="4").process_offset > 0


@pytest.mark.parametrize("value,expected", [
    ("0000000000", 0),
    ("5432100000", 12345),            # least significant digit first
    ("54321", 12345),                 # fewer digits: the same sum
    ("9999999999", 9999999999 % (1 << 32)),
    ("8463847412", -(1 << 31)),       # 2147483648 wraps to Integer.MIN_VALUE: fails as "not found"
    ("/", -1),                        # '/' - '0' = -1
    ("a", ord("a") - 48),
])
def test_expected_value_is_read_as_the_java_loop_does(value: str, expected: int) -> None:
    """``expectedCRC = expectedCRC * 10 + (c - '0')`` over the chars from the last to the first, in int
    arithmetic; the compiled reader agrees on the UTF-8 bytes of each value."""
    assert expected_prop_crc(value) == expected
    raw = value.encode()
    text = np.frombuffer(raw, dtype=np.uint8)
    exp, _ = prop_crc_check(text, 0, np.zeros(1, np.int64), np.zeros(1, np.int64),
                            np.array([[0, len(raw)]], np.int64), np.ones(1, bool))
    assert int(exp[0]) == expected


@pytest.mark.parametrize("raw", ["1\u00e92".encode(), "\U0001f511".encode(), b"1\xed\xa0\x802", b"\xff9"])
def test_non_ascii_values_count_utf16_units(raw: bytes) -> None:
    """Chars are UTF-16 units of the JDK's decoding (a supplementary character: two surrogates; malformed
    UTF-8: U+FFFD as the JDK's decoder places it)."""
    from store_format.javahash import java_utf8_decode
    text = np.frombuffer(raw, dtype=np.uint8)
    exp, _ = prop_crc_check(text, 0, np.zeros(1, np.int64), np.zeros(1, np.int64),
                            np.array([[0, len(raw)]], np.int64), np.ones(1, bool))
    acc = 0
    units = java_utf8_decode(raw).encode("utf-16-be", "surrogatepass")
    for k in range(len(units) // 2 - 1, -1, -1):   # the Java loop, literally
        acc = (acc * 10 + int.from_bytes(units[2 * k:2 * k + 2], "big") - 48) & 0xFFFFFFFF
    assert int(exp[0]) == (acc - (1 << 32) if acc >= 1 << 31 else acc)
