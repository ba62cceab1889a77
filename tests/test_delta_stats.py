"""String bounds of the Delta statistics: a cut minimum is still a lower bound, a cut maximum still an
upper bound (checked against the string itself, compared by code point as UTF-8 bytes compare)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipelines.delta_stats import STRING_PREFIX_LENGTH, string_max_bound, string_min_bound

_TEXT = st.text(alphabet=st.sampled_from(["a", "~", "\x7e", "\x7f", "\x80", "é", "\uffff", "\U0001f680",
                                          "\U0010ffff"]), max_size=3 * STRING_PREFIX_LENGTH)


@given(_TEXT)
def test_cut_bounds_still_bound_the_value(value: str) -> None:
    lo, hi = string_min_bound(value), string_max_bound(value)
    assert lo <= value and len(lo) <= STRING_PREFIX_LENGTH
    assert lo.encode() <= value.encode()
    if hi is not None:
        assert hi >= value and hi.encode() >= value.encode() and len(hi) <= 2 * STRING_PREFIX_LENGTH + 1
    else:   # only when no tie-breaker fits within twice the prefix: all U+10FFFF there
        assert set(value[STRING_PREFIX_LENGTH:2 * STRING_PREFIX_LENGTH + 1]) == {"\U0010ffff"}
    if len(value) <= STRING_PREFIX_LENGTH:
        assert lo == hi == value


def test_the_tie_breaker_follows_the_replaced_character() -> None:
    p = "x" * STRING_PREFIX_LENGTH
    assert string_max_bound(p + "abc") == p + "\x7f"            # ASCII: DEL is greater
    assert string_max_bound(p + "é") == p + "\U0010ffff"          # beyond ASCII: the top code point
    assert string_max_bound(p + "\U0010ffff" + "a") == p + "\U0010ffff" + "\x7f"   # grows past an unbeatable one
    assert string_max_bound(p + "\U0010ffff" * (STRING_PREFIX_LENGTH + 2)) is None
