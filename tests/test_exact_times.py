"""Time conversions that go through store_format.timeutil stay exact far from 1970, where a float
of seconds no longer holds every microsecond (Delta statistics of timestamps, expiry hours)."""
from __future__ import annotations

import datetime as _dt

from pipelines.delta_stats import ts_stat as _ts_stat
from store_format.expiry import is_time_to_delete
from store_format.timeutil import datetime_to_us

_UTC = _dt.timezone.utc


def test_timestamp_statistics_bound_the_value_far_from_1970() -> None:
    # 8256-02-16T22:43:31.391985Z: timestamp() * 1e6 gives ...392000, so a float-based minimum
    # would be above the value (and a reader could skip a file that holds it)
    t = _dt.datetime(8256, 2, 16, 22, 43, 31, 391985, tzinfo=_UTC)
    assert _ts_stat(t, floor=True) == "8256-02-16T22:43:31.391Z"
    assert _ts_stat(t, floor=False) == "8256-02-16T22:43:31.392Z"
    # naive datetimes are UTC, and microsecond ints give the same bounds
    assert _ts_stat(t.replace(tzinfo=None), floor=True) == "8256-02-16T22:43:31.391Z"
    assert _ts_stat(datetime_to_us(t), floor=True) == "8256-02-16T22:43:31.391Z"


def test_timestamp_statistics_round_outwards() -> None:
    t = _dt.datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=_UTC)
    assert _ts_stat(t, floor=True) == "1969-12-31T23:59:59.999Z"
    assert _ts_stat(t, floor=False) == "1970-01-01T00:00:00.000Z"
    whole = _dt.datetime(2024, 3, 10, 2, 0, tzinfo=_UTC)
    assert _ts_stat(whole, floor=True) == _ts_stat(whole, floor=False) == "2024-03-10T02:00:00.000Z"


def test_delete_hour_of_the_last_millisecond_before_an_hour() -> None:
    for year in (2024, 9000):
        hour_start = _dt.datetime(year, 6, 1, 5, tzinfo=_UTC)
        ms = (hour_start - _dt.datetime(1970, 1, 1, tzinfo=_UTC)) // _dt.timedelta(milliseconds=1)
        assert is_time_to_delete(ms - 1, frozenset({4}), "UTC")
        assert not is_time_to_delete(ms - 1, frozenset({5}), "UTC")
        assert is_time_to_delete(ms, frozenset({5}), "UTC")
        # Asia/Shanghai is UTC+8 all year
        assert is_time_to_delete(ms - 1, frozenset({12}), "Asia/Shanghai")
