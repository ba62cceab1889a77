"""Time zones and epoch-millisecond conversions, in one place.

The broker keeps times as Java epoch milliseconds (``System.currentTimeMillis``) and formats index
file names and cleanup hours in its JVM's default zone; the tables hold UTC timestamps.
"""
from __future__ import annotations

import datetime as _dt
from typing import overload

__all__ = ["zone", "ms_to_datetime", "us_to_datetime", "datetime_to_ms", "datetime_to_us", "iso_ms", "iso_us",
           "EPOCH"]

EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def zone(tz: _dt.tzinfo | str | None) -> _dt.tzinfo:
    """A tzinfo from an IANA name (``UTC``, ``Asia/Shanghai``), a tzinfo, or None (UTC).

    Raises:
        ValueError: the name is not a time zone known to this system.
    """
    if tz is None or (isinstance(tz, str) and tz.upper() == "UTC"):
        return _dt.timezone.utc
    if isinstance(tz, str):
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
        try:
            return ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"unknown time zone {tz!r}") from e
    return tz


@overload
def ms_to_datetime(ms: int) -> _dt.datetime: ...
@overload
def ms_to_datetime(ms: None) -> None: ...
@overload
def ms_to_datetime(ms: int | None) -> _dt.datetime | None: ...
def ms_to_datetime(ms: int | None) -> _dt.datetime | None:
    """UTC datetime of epoch milliseconds; works for any long (no platform ``fromtimestamp`` limits)
    within the datetime range; None stays None."""
    if ms is None:
        return None
    return EPOCH + _dt.timedelta(milliseconds=int(ms))


@overload
def us_to_datetime(us: int) -> _dt.datetime: ...
@overload
def us_to_datetime(us: None) -> None: ...
@overload
def us_to_datetime(us: int | None) -> _dt.datetime | None: ...
def us_to_datetime(us: int | None) -> _dt.datetime | None:
    """UTC datetime of epoch microseconds (Arrow's ``timestamp[us]``); None stays None."""
    if us is None:
        return None
    return EPOCH + _dt.timedelta(microseconds=int(us))


@overload
def datetime_to_ms(t: _dt.datetime | int) -> int: ...
@overload
def datetime_to_ms(t: None) -> None: ...
@overload
def datetime_to_ms(t: _dt.datetime | int | None) -> int | None: ...
def datetime_to_ms(t: _dt.datetime | int | None) -> int | None:
    """Epoch milliseconds of a datetime (naive = UTC) or an int (returned as is)."""
    if t is None:
        return None
    if isinstance(t, _dt.datetime):
        return int(round((t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)).timestamp() * 1000))
    return int(t)


def datetime_to_us(t: _dt.datetime) -> int:
    """Exact epoch microseconds of a datetime (naive = UTC), as Arrow's ``timestamp[us]`` holds it."""
    aware = t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)
    return (aware - EPOCH) // _dt.timedelta(microseconds=1)


def iso_us(us: int | None) -> str | None:
    """``2024-03-10T02:00:00.000123Z`` of epoch microseconds (any value in the datetime range), None for None."""
    if us is None:
        return None
    return us_to_datetime(us).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_ms(ms: int | None) -> str | None:
    """``2024-03-10T02:00:00.000Z``, or None for None and negative values."""
    if ms is None or ms < 0:
        return None
    return ms_to_datetime(ms).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"
