"""The messages table's ``properties`` map against ``MessageDecoder.string2messageProperties``."""
from __future__ import annotations

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st
from oracle_reput import string_to_properties

from store_format.records import properties_map

_WORDS = st.sampled_from(["", "a", "b", "KEYS", "TAGS", "é", "v 1", "日本", "\x01", "\x02"])
# strings built from name/value pairs (names repeat often), with stray separators and empty parts
_PAIRS = st.lists(st.tuples(_WORDS, st.sampled_from(["\x01", "", "\x01\x01"]), _WORDS), max_size=8).map(
    lambda pairs: "\x02".join(n + sep + v for n, sep, v in pairs))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), _PAIRS), max_size=30), st.integers(0, 5))
@example(["a\x01x\x02b\x01y\x02a\x01z", "a\x01\x01\x02\x01b\x02a\x01\x01", "\x02\x02a\x01b\x02"], 0)
def test_each_string_parses_as_the_broker_parses_it(values, cut) -> None:
    arr = pa.array(values, pa.string()).slice(min(cut, len(values)))
    maps = properties_map(arr).to_pylist()
    for text, got in zip(arr.to_pylist(), maps):
        expected = string_to_properties(text or "")
        assert dict(got) == expected
        assert len(got) == len(expected)  # a name once: later pairs replaced earlier ones
