"""``ip:port`` strings of the stored socket addresses (born host, store host), as
``MessageDecoder`` reads them: 4 (IPv4) or 16 (IPv6) address bytes and a 4-byte big-endian port."""
from __future__ import annotations

import ipaddress

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from store_format.records import host_strings


def _expected(row: bytes, v6: bool) -> str:
    if v6:
        return f"[{ipaddress.IPv6Address(row[:16])}]:{int.from_bytes(row[16:20], 'big')}"
    return ".".join(str(b) for b in row[:4]) + f":{int.from_bytes(row[4:8], 'big')}"


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.binary(min_size=20, max_size=20), st.booleans()), min_size=1, max_size=40),
       all_v4=st.booleans())
def test_host_strings_match_the_decoded_addresses(rows, all_v4) -> None:
    """Every byte value and port (up to 2**32 - 1), all-IPv4 columns and mixed ones."""
    text = np.frombuffer(b"".join(r for r, _ in rows), dtype=np.uint8)
    v6 = np.array([False if all_v4 else v for _, v in rows])
    starts = np.arange(len(rows), dtype=np.int64) * 20 + 1000
    got, v4_rows = host_strings(text, 1000, starts, v6)
    assert got.to_pylist() == [_expected(r, bool(v)) for (r, _), v in zip(rows, v6)]
    assert list(v4_rows) == [i for i, v in enumerate(v6) if not v]
