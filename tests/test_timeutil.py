"""store_format.timeutil: the epoch conversions the tables and the validation share."""
from __future__ import annotations

import datetime as _dt

from hypothesis import given
from hypothesis import strategies as st

from store_format.timeutil import datetime_to_ms, datetime_to_us, iso_ms, iso_us, ms_to_datetime, us_to_datetime

_UTC = _dt.timezone.utc


def test_iso_us_keeps_microseconds() -> None:
    assert iso_us(0) == "1970-01-01T00:00:00.000000Z"
    assert iso_us(1_704_067_200_000_123) == "2024-01-01T00:00:00.000123Z"
    assert iso_us(-1) == "1969-12-31T23:59:59.999999Z"
    assert iso_us(None) is None
    # the millisecond form stays as it was: None for unset (negative) broker times
    assert iso_ms(1_704_067_200_001) == "2024-01-01T00:00:00.001Z" and iso_ms(-1) is None


def test_datetime_to_us_naive_is_utc_and_zones_count() -> None:
    t = _dt.datetime(2024, 3, 10, 2, 0, 0, 7)
    assert datetime_to_us(t) == datetime_to_us(t.replace(tzinfo=_UTC)) == 1_710_036_000_000_007
    shanghai = _dt.timezone(_dt.timedelta(hours=8))
    assert datetime_to_us(_dt.datetime(2024, 3, 10, 10, 0, 0, 7, tzinfo=shanghai)) == 1_710_036_000_000_007


@given(st.datetimes(min_value=_dt.datetime(1, 1, 2), max_value=_dt.datetime(9999, 12, 30)))
def test_round_trips_are_exact(t: _dt.datetime) -> None:
    # exact integer arithmetic (a float timestamp() loses microseconds far from 1970)
    us = datetime_to_us(t)
    assert us_to_datetime(us) == t.replace(tzinfo=_UTC)
    assert iso_us(us) == t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ms = us // 1000
    assert datetime_to_ms(ms_to_datetime(ms)) == ms
