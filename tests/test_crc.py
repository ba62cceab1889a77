"""store_format.crc: the body CRC rule (``UtilAll.crc32``) computed per byte string (zlib) and over spans
(the numba kernel) gives the same values, and the values the broker stored in golden records."""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_format import commitlog as cl
from store_format import crc as crc_module
from store_format.config import load_broker_config
from store_format.crc import BODY_CRC_MASK, body_crc, body_crc_spans, crc32, crc32_spans

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden"


def _spans(pieces: list[bytes], origin: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pieces laid end to end in one buffer, addressed as positions starting at ``origin``."""
    buf = np.frombuffer(b"".join(pieces) or b"\0", dtype=np.uint8)
    lens = np.array([len(p) for p in pieces], dtype=np.int64)
    starts = origin + np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64) if pieces else lens
    return buf, starts, lens


def test_check_value_of_the_crc32_standard() -> None:
    # the CRC-32 (IEEE) check value of "123456789"; the broker clears the sign bit
    assert crc32(b"123456789") == 0xCBF43926
    assert body_crc(b"123456789") == 0x4BF43926
    buf, starts, lens = _spans([b"123456789"], 0)
    assert crc32_spans(buf, 0, starts, lens).tolist() == [0xCBF43926]
    assert body_crc_spans(buf, 0, starts, lens).tolist() == [0x4BF43926]


def test_empty_and_missing_bodies_are_zero() -> None:
    assert crc32(b"") == 0 and body_crc(b"") == 0
    buf = np.frombuffer(b"abc", dtype=np.uint8)
    out = body_crc_spans(buf, 0, np.array([0, -1, 1]), np.array([0, 3, -2]))
    assert out.tolist() == [0, 0, 0] and out.dtype == np.int32


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.binary(max_size=300), max_size=12), origin=st.integers(0, 1 << 40))
def test_kernel_agrees_with_zlib(pieces: list[bytes], origin: int) -> None:
    buf, starts, lens = _spans(pieces, origin)
    want = [zlib.crc32(p) for p in pieces]
    assert [crc32(p) for p in pieces] == want
    assert crc32(np.frombuffer(b"".join(pieces), dtype=np.uint8)) == zlib.crc32(b"".join(pieces))
    assert crc32_spans(buf, origin, starts, lens).tolist() == want
    masked = [w & 0x7FFFFFFF for w in want]
    assert [body_crc(p) for p in pieces] == masked
    got = body_crc_spans(buf, origin, starts, lens)
    assert got.dtype == np.int32 and got.tolist() == masked
    # each compiled loop on its own (crc32_spans runs one of them)
    table = np.empty(len(starts), dtype=np.int64)
    crc_module._table_spans(buf, np.int64(origin), starts, lens, crc_module._TABLES, table)
    assert table.tolist() == want
    isal = np.empty(len(starts), dtype=np.int64)
    crc_module._isal_spans(buf, np.int64(origin), starts, lens, isal)
    assert isal.tolist() == want


def test_spans_use_isa_l() -> None:
    """The ``isal`` package is a dependency: the spans' CRCs come from its folding code, not the table
    walk (eight times slower on 1 KiB bodies)."""
    assert crc_module.SPANS_ENGINE == "isa-l"


def test_a_span_beyond_the_buffer_is_refused() -> None:
    buf = np.frombuffer(b"abcdef", dtype=np.uint8)
    with pytest.raises(IndexError):
        crc32_spans(buf, 100, np.array([100, 103]), np.array([3, 4]))
    assert crc32_spans(buf, 100, np.array([100, 103, 200]), np.array([3, 3, 0])).tolist() == [
        zlib.crc32(b"abc"), zlib.crc32(b"def"), 0]


def test_sign_bit_is_cleared_not_wrapped() -> None:
    # find bodies whose CRC-32 has the top bit set: Java's (int) of the masked long stays positive
    bodies = [bytes([i, j]) for i in range(16) for j in range(16)]
    high = [b for b in bodies if zlib.crc32(b) & 0x80000000]
    assert high, "no body with the top CRC bit set among the candidates"
    for b in high:
        assert body_crc(b) == zlib.crc32(b) - 0x80000000 == zlib.crc32(b) & BODY_CRC_MASK
    buf, starts, lens = _spans(high, 0)
    assert (body_crc_spans(buf, 0, starts, lens) >= 0).all()


@pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"no golden stores at {GOLDEN}")
@pytest.mark.parametrize("case", ["features-4.9.8", "basic-5.3.3"])
def test_values_equal_the_broker_written_body_crc(case: str) -> None:
    """Every record of a broker-written segment: both computations equal the stored bodyCRC."""
    path = sorted((GOLDEN / case / "store" / "commitlog").iterdir())[0]
    data = path.read_bytes()
    config = load_broker_config((GOLDEN / case / "broker.conf").read_text())
    res = cl.walk_range(lambda pos, n: data[pos:pos + n], int(path.name), len(data),
                        cl.WalkState.at_slice_start(0, len(data)), len(data), config)
    rec = res.rec
    assert len(rec) > 100
    text = np.asarray(res.text, dtype=np.uint8)
    starts, lens = rec[:, cl.R_BODY_START], rec[:, cl.R_BODY_LEN]
    stored = rec[:, cl.R_CRC].astype(np.int32)
    assert (body_crc_spans(text, res.text_origin, starts, lens) == stored).all()
    one_by_one = [body_crc(data[s:s + n]) for s, n in zip(starts.tolist(), lens.tolist())]
    assert one_by_one == stored.tolist()
