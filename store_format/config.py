"""Broker settings that shape the store files, read from ``broker.conf`` with the broker's defaults.

Mirrors ``MessageStoreConfig`` (field defaults and getters) and the delay-level table of
``ScheduleMessageService.parseDelayLevel`` / ``DefaultMessageStore.parseDelayLevel`` (5.x).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Mapping

from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE

__all__ = ["BrokerConfig", "parse_java_properties", "load_broker_config", "parse_delay_levels"]

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_TIME_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value``, ``key: value``, ``key value``, ``#``/``!``
    comments, backslash line continuations and escapes) as ``java.util.Properties.load`` does."""
    result: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        # an odd number of trailing backslashes continues the line
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        key_chars: list[str] = []
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if c in "=: \t\f":
                break
            key_chars.append(c)
            i += 1
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape("".join(key_chars))] = _unescape(rest)
    return result


def _unescape(value: str) -> str:
    def repl(m: re.Match[str]) -> str:
        s = m.group(1)
        if s.startswith("u"):
            return chr(int(s[1:], 16))
        return {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(s, s)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", repl, value)


def parse_delay_levels(spec: str) -> tuple[int, ...]:
    """Delay of each level in ms, level 1 first [ScheduleMessageService.parseDelayLevel]."""
    levels = []
    for token in spec.split(" "):
        if not token or token[-1] not in _TIME_UNIT_MS:
            raise UnsupportedConfigError(
                f"messageDelayLevel={spec!r}: each level must be a number followed by s, m, h or d "
                "(the broker fails to start on this value too)")
        try:
            levels.append(int(token[:-1]) * _TIME_UNIT_MS[token[-1]])
        except ValueError:
            raise UnsupportedConfigError(f"messageDelayLevel={spec!r}: {token!r} is not a number and a unit") from None
    return tuple(levels)


def _bool(value: str) -> bool:
    # MixAll.properties2Object uses Boolean.parseBoolean: only "true" (any case) is true
    return value.strip().lower() == "true"


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """The subset of ``MessageStoreConfig``/``BrokerConfig`` that decides the bytes of
    ``consumequeue/`` and ``index/``, and the cleanup settings used by the expiry audit."""

    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = 300_000 * CQ_UNIT_SIZE
    maxHashSlotNum: int = 5_000_000
    maxIndexNum: int = 5_000_000 * 4
    messageIndexEnable: bool = True
    messageDelayLevel: str = DEFAULT_DELAY_LEVELS
    enableMultiDispatch: bool = False
    enableLmq: bool = False
    enableConsumeQueueExt: bool = False
    brokerId: int = 0
    enableDLegerCommitLog: bool = False
    duplicationEnable: bool = False
    storeType: str = "default"
    # cleanup (expiry audit) [MessageStoreConfig]
    fileReservedTime: int = 72
    deleteWhen: str = "04"
    diskMaxUsedSpaceRatio: int = 75
    deleteFileBatchMax: int = 10
    destroyMapedFileIntervalForcibly: int = 1000 * 120
    # which broker line's reput to mirror where 4.9.x and 5.x differ: "4", "5", or "auto" (decided
    # from the records: see store_format.reput.detect_broker_version)
    brokerVersion: str = "auto"

    def __post_init__(self) -> None:
        if self.enableConsumeQueueExt:
            raise UnsupportedConfigError(
                "enableConsumeQueueExt=true is not supported: with it the broker stores ConsumeQueueExt "
                "addresses instead of tag hash codes. Rebuild with the broker instead, or disable it.")
        for name in ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum"):
            if getattr(self, name) <= 0:
                raise UnsupportedConfigError(f"{name}={getattr(self, name)} must be a positive number")
        if self.maxIndexNum < 2:
            raise UnsupportedConfigError("maxIndexNum must be at least 2 (an index file holds maxIndexNum - 1 entries)")
        if self.brokerVersion not in ("4", "5", "auto"):
            raise UnsupportedConfigError(f"brokerVersion={self.brokerVersion!r}: use 4 (4.9.x), 5 (5.x) or auto")
        if self.enableDLegerCommitLog:
            raise UnsupportedConfigError(
                "enableDLegerCommitLog=true: a DLedger commitlog wraps records in DLedger entries; this project "
                "reads plain commitlogs only")
        if self.duplicationEnable:
            raise UnsupportedConfigError(
                "duplicationEnable=true: the broker's reput then stops at a confirm offset this project cannot "
                "know; rebuild with the broker, or disable it")
        if self.storeType != "default":
            raise UnsupportedConfigError(
                f"storeType={self.storeType}: only the file-based consume queue store (storeType=default) is "
                "rebuilt; RocksDB consume queues are not files")
        parse_delay_levels(self.messageDelayLevel)

    @property
    def cq_file_size(self) -> int:
        """Consume queue file size rounded up to whole units [MessageStoreConfig.getMappedFileSizeConsumeQueue]."""
        units = -(-self.mappedFileSizeConsumeQueue // CQ_UNIT_SIZE)
        return units * CQ_UNIT_SIZE

    @property
    def index_entries_per_file(self) -> int:
        """Entries an index file holds: numbers 1 .. maxIndexNum - 1 [IndexFile.isWriteFull]."""
        return self.maxIndexNum - 1

    @property
    def delay_levels_ms(self) -> tuple[int, ...]:
        return parse_delay_levels(self.messageDelayLevel)

    @property
    def empty_index_count(self) -> int:
        """indexCount on disk of an index file nothing was put into (see
        :func:`store_format.indexfile.build_index_array`)."""
        return 1 if self.is_5x else 0

    @property
    def is_master(self) -> bool:
        """``brokerId == MixAll.MASTER_ID``: a master's reput skips past unreadable records."""
        return self.brokerId == 0

    @property
    def is_5x(self) -> bool:
        return self.brokerVersion == "5"

    @property
    def accepts_v2_records(self) -> bool:
        """Whether records with the V2 magic code (5.x, long topics) are readable: not for a broker
        known to be 4.9.x, whose ``checkMessageAndReturnSize`` knows the V1 code only.  A store whose
        line was not given and looked like 4.9.x ("auto") still reads them: nothing says the broker
        could not."""
        return self.brokerVersion != "4"

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **overrides: object) -> "BrokerConfig":
        """Build from broker.conf entries; unknown keys are ignored as the broker ignores them."""
        kwargs: dict[str, object] = {}
        for field in dataclasses.fields(cls):
            if field.name not in props:
                continue
            raw = props[field.name].strip()
            if field.type in ("int", int):
                try:
                    kwargs[field.name] = int(raw)
                except ValueError:
                    raise UnsupportedConfigError(f"{field.name}={raw!r} in broker.conf is not a whole number") from None
            elif field.type in ("bool", bool):
                kwargs[field.name] = _bool(raw)
            else:
                kwargs[field.name] = raw
        kwargs.update(overrides)
        return cls(**kwargs)  # type: ignore[arg-type]

    def as_properties(self) -> dict[str, str]:
        return {f.name: str(getattr(self, f.name)).lower() if isinstance(getattr(self, f.name), bool)
                else str(getattr(self, f.name)) for f in dataclasses.fields(self)}


def load_broker_config(text: str | None, **overrides: object) -> BrokerConfig:
    """Parse broker.conf text (None: all defaults)."""
    return BrokerConfig.from_properties(parse_java_properties(text) if text else {}, **overrides)
