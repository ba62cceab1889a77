"""The command line's argument types (:mod:`pipelines.cli`): each turns an option's text into its value, or raises
``argparse.ArgumentTypeError`` with the one line ``error: ...`` the parser prints (exit 2)."""
from __future__ import annotations

import argparse
import datetime as _dt

__all__ = ["MIN_SPLIT_SIZE", "positive_int", "size_arg", "split_size_arg", "time_arg", "zone_arg"]

MIN_SPLIT_SIZE = 4096  # pipelines.plan.plan_splits refuses less


def size_arg(text: str) -> int:
    """Bytes from ``134217728``, ``128m``, ``128MiB``, ``1g``, ``512k``."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower()
    for suffix in ("ib", "b"):
        if t.endswith(suffix) and len(t) > len(suffix):
            t = t[: -len(suffix)]
            break
    try:
        value = int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (use bytes or e.g. 64m, 1g)") from None
    return value


def split_size_arg(text: str) -> int:
    value = size_arg(text)
    if value < MIN_SPLIT_SIZE:
        raise argparse.ArgumentTypeError(
            f"{text!r} is too small for a split: use at least 4k (the default is 128m)")
    return value


def time_arg(text: str) -> int:
    """Epoch milliseconds from ``now``, digits (epoch ms), or ISO 8601 (UTC unless it names a zone)."""
    from store_format.timeutil import datetime_to_ms
    t = text.strip()
    if t.lower() == "now":
        return datetime_to_ms(_dt.datetime.now(_dt.timezone.utc))
    if t.isdigit():
        return int(t)
    try:
        v = _dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time: use ISO 8601 (2024-01-10T04:00:00Z), epoch ms, or now") from None
    return datetime_to_ms(v)  # naive: UTC


def zone_arg(text: str) -> str:
    """An IANA time zone name (``UTC``, ``Asia/Shanghai``), checked now rather than after the scan."""
    from store_format.timeutil import zone
    try:
        zone(text)
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(f"unknown time zone {text!r} (use an IANA name such as UTC or "
                                         "Asia/Shanghai)") from None
    return text


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be above 0")
    return value
