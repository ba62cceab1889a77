"""Java ``String.hashCode`` over UTF-16 and ``IndexFile.indexKeyHashMethod`` (store_format.javahash)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from store_format import walkresult as wr
from store_format.dispatch import put_index_keys
from store_format.javahash import (
    index_key,
    index_key_hash,
    index_key_hashes,
    java_string_hash,
    java_string_hashes,
    java_utf8_decode,
    utf16_hash_update,
)
from store_format.layout import signed32

INT_MIN = -(2**31)


def reference_hash(s: str) -> int:
    """``h = 31 * h + c`` over UTF-16 code units, wrapped to a signed 32-bit int."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return signed32(h)


# values printed by a JVM (String.hashCode), and by hand for the non-BMP ones
KNOWN = {
    "": 0,
    "a": 97,
    "abc": 96354,
    "hello": 99162322,
    "Hello World": -862545276,
    "hello world": 1794106052,
    "Aa": 2112,
    "BB": 2112,
    "polygenelubricants": INT_MIN,
    "GydZG_": INT_MIN,
    "DESIGNING WORKHOUSES": INT_MIN,
    "订单": 0x8BA2 * 31 + 0x5355,
    "😀": 0xD83D * 31 + 0xDE00,       # U+1F600 is the surrogate pair D83D DE00
    "𝄞": 0xD834 * 31 + 0xDD1E,       # U+1D11E: D834 DD1E
}


@pytest.mark.parametrize("text,expected", sorted(KNOWN.items()))
def test_known_hash_codes(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected
    assert reference_hash(text) == expected


def test_vectorized_known_hash_codes() -> None:
    texts = list(KNOWN)
    assert java_string_hashes(texts).tolist() == list(KNOWN.values())
    assert java_string_hashes([]).shape == (0,)


def test_colliding_keys_share_an_index_slot() -> None:
    assert index_key_hash("Topic#Aa") == index_key_hash("Topic#BB")
    assert index_key_hash("Aa") == 2112


def test_min_value_hash_maps_to_index_hash_zero() -> None:
    for s in ("polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES"):
        assert java_string_hash(s) == INT_MIN
        assert index_key_hash(s) == 0
    assert index_key_hashes(["polygenelubricants", "Hello World"]).tolist() == [0, 862545276]


def test_negative_hash_is_made_positive() -> None:
    assert index_key_hash("Hello World") == 862545276


def test_surrogate_pairs_count_as_two_units() -> None:
    # the hash of a non-BMP character is the hash of its two surrogates, never of its code point
    assert java_string_hash("😀") == java_string_hash("\ud83d\ude00")
    assert java_string_hash("😀") != 0x1F600
    assert java_string_hash("a😀b") == reference_hash("a😀b")


def _utf8_hash(text: str) -> tuple[int, bool]:
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    h, ok = utf16_hash_update(np.int64(0), data, 0, len(data))
    return signed32(int(h)), bool(ok)


def test_utf8_kernel_rejects_malformed_bytes() -> None:
    for bad in (b"\xff", b"\xc3", b"\xe4\xb8", b"\xed\xa0\x80", b"\xf0\x9f\x98"):
        data = np.frombuffer(bad, dtype=np.uint8)
        _, ok = utf16_hash_update(np.int64(0), data, 0, len(data))
        assert not ok, bad


def test_utf8_kernel_continues_a_hash() -> None:
    # topic#key hashes are built by continuing the topic's hash with '#' and the key
    data = np.frombuffer("Topic#订单😀".encode(), dtype=np.uint8)
    h, ok = utf16_hash_update(np.int64(0), data, 0, 6)
    h, ok = utf16_hash_update(h, data, 6, len(data))
    assert ok and signed32(int(h)) == reference_hash("Topic#订单😀")


def test_index_key_is_topic_hash_key() -> None:
    # IndexService.buildKey: topic + "#" + key, with no escaping of '#' in either part
    assert index_key("TopicA", "order-1") == "TopicA#order-1"
    assert index_key("a#b", "#") == "a#b##"
    assert index_key("T", "") == "T#"


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=20), st.text(alphabet=st.characters(blacklist_characters=" "), min_size=1,
                                                  max_size=20))
@example(topic="T", key="\ud800")            # a lone surrogate: stored as '?'
@example(topic="T", key="k\ud83d\ude00\udc00")  # a pair, then a lone low surrogate
def test_kernel_key_hash_is_the_hash_of_index_key(topic: str, key: str) -> None:
    # the walk hashes keys by continuing the topic's hash over the separator and the key bytes; it
    # must give the hash of the same string index_key builds (and lookups hash).  The bytes are what
    # a producer stores for the key: a lone surrogate (which a Java String can hold) is a '?' there,
    # so the broker indexes the '?' (see java_getbytes_utf8)
    stored = java_getbytes_utf8(key)
    key = stored.decode("utf-8")
    data = np.frombuffer(stored, dtype=np.uint8)
    spans = np.full((wr.N_PROPS, 2), -1, dtype=np.int64)
    spans[wr.P_UNIQ] = (0, len(data))
    keys = np.zeros((4, wr.N_KEY_FIELDS), dtype=np.int64)
    topic_hash = np.int64(java_string_hash(topic) & 0xFFFFFFFF)
    n_key, ok = put_index_keys(data, np.int64(0), np.int64(0), topic_hash, spans, keys, np.int64(0))
    assert ok and n_key == 1
    assert signed32(int(keys[0, wr.K_HASH])) == java_string_hash(index_key(topic, key)) == reference_hash(
        topic + "#" + key)
    assert index_key_hash(index_key(topic, key)) == int(index_hash_of(int(keys[0, wr.K_HASH])))


def java_getbytes_utf8(s: str) -> bytes:
    """``String.getBytes(StandardCharsets.UTF_8)`` of the Java string holding the UTF-16 code units of
    ``s``: how ``MessageDecoder.messageProperties2String`` turns a key into the bytes the broker
    stores.  Surrogate pairs become one 4-byte sequence; the JDK encoder replaces a lone surrogate
    (malformed input) with its replacement byte ``'?'``, which Python's ``"replace"`` handler also
    writes.  The round trip through UTF-16 first joins two code points that form a pair, as the
    Java string would hold them."""
    units = s.encode("utf-16-be", "surrogatepass")
    return units.decode("utf-16-be", "surrogatepass").encode("utf-8", "replace")


def test_getbytes_mirror_replaces_only_lone_surrogates() -> None:
    # independent of the hash: the JDK writes '?' for a lone surrogate and 4 bytes for a pair
    assert java_getbytes_utf8("a\ud800b") == b"a?b"
    assert java_getbytes_utf8("\udc00") == b"?"
    assert java_getbytes_utf8("\ud83d\ude00") == "\U0001f600".encode()
    assert java_getbytes_utf8("订单") == "订单".encode()


def index_hash_of(h: int) -> int:
    s = signed32(h)
    return 0 if s == INT_MIN else abs(s)


# any text, lone surrogates included (a Java String may hold them)
_texts = st.lists(st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\ud83d", "Aa", "BB", "😀"])),
                  max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(_texts, max_size=20))
def test_vectorized_agrees_with_scalar(texts: list[str]) -> None:
    vec = java_string_hashes(texts).tolist()
    assert vec == [java_string_hash(t) for t in texts] == [reference_hash(t) for t in texts]
    idx = index_key_hashes(texts).tolist()
    assert idx == [index_key_hash(t) for t in texts]
    assert idx == [0 if reference_hash(t) == INT_MIN else abs(reference_hash(t)) for t in texts]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_utf8_kernel_agrees_with_reference(text: str) -> None:
    # text() has no lone surrogates: every string here is valid UTF-8
    assert _utf8_hash(text) == (reference_hash(text), True)


# ``new String(bytes, UTF_8)`` on JDK 17: malformed input and the U+FFFD the JDK puts for it
JDK_DECODED = {
    b"\xed\xa0\x80": "\ufffd",              # an encoded surrogate: one character (Python: three)
    b"a\xed\xa0\x80b": "a\ufffdb",
    b"\xed\xbf\xe1\x9f": "\ufffd\ufffd",     # (Python: three)
    b"\xe4\xb8": "\ufffd",                   # cut short at the end
    b"\xf0\x9f\x98": "\ufffd",
    b"\xe0\x80\x80": "\ufffd\ufffd\ufffd",     # overlong
    b"\xc0\xaf": "\ufffd\ufffd",
    b"\xf4\x90\x80\x80": "\ufffd\ufffd\ufffd\ufffd",  # above U+10FFFF
    b"\xff": "\ufffd",
}


@pytest.mark.parametrize("data,expected", sorted(JDK_DECODED.items()))
def test_malformed_utf8_decodes_as_the_jdk(data: bytes, expected: str) -> None:
    assert java_utf8_decode(data) == expected


def test_jdk_decoding_decides_the_hash() -> None:
    assert java_string_hash(java_utf8_decode(b"a\xed\xa0\x80b")) == 0x206C26  # printed by JDK 17


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_valid_utf8_decodes_as_python(text: str) -> None:
    assert java_utf8_decode(text.encode("utf-8")) == text


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12))
def test_decoding_never_yields_lone_surrogates(data: bytes) -> None:
    decoded = java_utf8_decode(data)
    decoded.encode("utf-8")  # raises on a lone surrogate
    assert decoded.count("\ufffd") <= len(data)
