"""Broker settings that shape the store files, read from ``broker.conf`` with the broker's defaults.

Mirrors ``MessageStoreConfig`` (field defaults and getters) and the delay-level table of
``ScheduleMessageService.parseDelayLevel`` / ``DefaultMessageStore.parseDelayLevel`` (5.x).

``broker.conf`` is read the way the broker reads it: ``java.util.Properties.load`` (its
``LineReader``, separators and escapes; :func:`store_format.javaproperties.read_properties`), then
``MixAll.properties2Object`` (``BrokerStartup``), which hands each key to the setter of that
name and parses the value with ``Integer.parseInt``, ``Long.parseLong`` or ``Boolean.parseBoolean``
and silently ignores a value that does not parse.  Because the broker ignores what it cannot use,
a typo silently gives the broker's default; so :func:`load_broker_config` checks every line first:

* a line that cannot be a setting (Properties rejects it, it has no key, or its key is not a name)
  is an error with its line number;
* a setting this project reproduces whose value the broker would not take (``maxIndexNum=abc``,
  ``maxIndexNum=20000 `` with a trailing blank, a number beyond a Java int) or whose value the
  broker cannot use (an index file over 2 GiB) is an error saying what would be accepted;
* a key that is no broker or store setting (:mod:`store_format.setting_names`) is a warning (the
  broker ignores it), with "did you mean" for near misses (``mapedFileSizeConsumeQueue`` →
  ``mappedFileSizeConsumeQueue``).
"""
from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping

from .batchconsumequeue import DEFAULT_BCQ_FILE_SIZE
from .consumequeue_ext import END_BLANK_DATA_LENGTH, EXT_UNIT_SIZE, MIN_EXT_FILE_SIZE
from .errors import UnsupportedConfigError
from .javaproperties import PropertyLine, java_boolean, java_double_ok, java_integer, read_properties
from .layout import CQ_UNIT_SIZE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE
from .setting_names import SETTING_TYPES, closest_setting

__all__ = ["BrokerConfig", "load_broker_config", "parse_delay_levels", "JAVA_INT_MAX", "JAVA_LONG_MAX",
           "ROCKSDB_STORE_TYPE"]

log = logging.getLogger(__name__)

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_TIME_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

BROKER_LINES = ("4", "5", "5.5", "auto")   # brokerVersion values

JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1

# what a key must look like to name any setting at all (a Java identifier, or dotted names used by
# plugins); anything else on a line is not a property the user meant
_KEY_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.\-]*\Z")


def _where(line: int | None) -> str:
    return f"broker.conf line {line}: " if line else ""


def _check_entries(entries: list[PropertyLine]) -> None:
    """Errors for lines that cannot be a setting, warnings for keys the broker ignores, repeated
    keys and values the broker would not take for settings this project does not use."""
    seen: dict[str, int] = {}
    fields = {f.name: f for f in dataclasses.fields(BrokerConfig)}
    for e in entries:
        where = _where(e.line)
        if not e.key:
            raise UnsupportedConfigError(
                f"{where}{e.text[:80]!r} is not a property: it has no key before '=' or ':'; write name=value, "
                "or start the line with # to make it a comment")
        if not _KEY_RE.match(e.key):
            raise UnsupportedConfigError(
                f"{where}{e.text[:80]!r} is not a property: {e.key[:60]!r} cannot name a broker setting (names "
                "are letters and digits such as maxIndexNum); write name=value, or start the line with # to "
                "make it a comment")
        if e.key in seen:
            log.warning("%s%s is set again (line %d): the broker keeps the last value, %r", where, e.key,
                        seen[e.key], e.value)
        seen[e.key] = e.line
        java_type = SETTING_TYPES.get(e.key)
        if java_type is None:
            target = closest_setting(e.key)
            hint = f"; did you mean {target}?" if target else ""
            if target in fields:
                hint += f" (it shapes the rebuilt files; without it {target} keeps {fields[target].default!r})"
            log.warning("%s%s is no broker or store setting: the broker ignores it%s", where, e.key, hint)
            continue
        if e.key in fields:
            continue  # checked, with errors, when the config is built
        if java_type in ("int", "long") and java_integer(e.value, 32 if java_type == "int" else 64) is None:
            log.warning("%s%s=%r is not a Java %s (%s): the broker ignores this line", where, e.key, e.value,
                        java_type, "Integer.parseInt" if java_type == "int" else "Long.parseLong")
        elif java_type == "boolean" and e.value.lower() not in ("true", "false"):
            log.warning("%s%s=%r is read as false by the broker (Boolean.parseBoolean takes only true or false)",
                        where, e.key, e.value)
        elif java_type == "double" and not java_double_ok(e.value):
            log.warning("%s%s=%r is not a number (Double.parseDouble): the broker ignores this line", where, e.key,
                        e.value)


def _int_setting(name: str, raw: str, java_type: str, default: object, line: int | None) -> int:
    """A whole-number setting as ``Integer.parseInt``/``Long.parseLong`` reads it, or an error saying
    why the broker would have ignored the line."""
    bits = 64 if java_type == "long" else 32
    value = java_integer(raw, bits)
    if value is not None:
        return value
    limit = JAVA_LONG_MAX if bits == 64 else JAVA_INT_MAX
    stripped = java_integer(raw.strip(" \t\f"), bits)
    if stripped is not None:
        why = "blanks around the number make Integer.parseInt fail"
        fix = f"remove them ({name}={stripped}), or delete the line if the store was written with the default"
    elif java_integer(raw.strip(" \t\f"), 128) is not None:
        why = f"it is beyond a Java {java_type} (at most {limit})"
        fix = f"use a whole number up to {limit}"
    else:
        why = "it is not a whole number"
        fix = f"use digits only, e.g. {name}={default}"
    raise UnsupportedConfigError(
        f"{_where(line)}{name}={raw!r} is not a setting the broker can read ({why}): the broker would ignore "
        f"the line and run with {default}; {fix}")


def _index_size_error(slots: int, entries: int) -> str | None:
    """Why an IndexFile of these dimensions cannot exist, or None.  ``IndexFile``'s constructor
    computes ``40 + hashSlotNum * 4 + indexNum * 20`` in Java int arithmetic and maps the file as one
    ``MappedByteBuffer`` (``MappedFile.init``), so the size must fit a Java int."""
    size = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slots + INDEX_ENTRY_SIZE * entries
    if size <= JAVA_INT_MAX:
        return None
    max_entries = (JAVA_INT_MAX - INDEX_HEADER_SIZE - INDEX_SLOT_SIZE * slots) // INDEX_ENTRY_SIZE
    max_slots = (JAVA_INT_MAX - INDEX_HEADER_SIZE - INDEX_ENTRY_SIZE * entries) // INDEX_SLOT_SIZE
    options = []
    if max_entries >= 2:
        options.append(f"maxIndexNum up to {max_entries:,} with this maxHashSlotNum")
    if max_slots >= 1:
        options.append(f"maxHashSlotNum up to {max_slots:,} with this maxIndexNum")
    accepted = " or ".join(options) if options else "smaller values of both"
    return (f"maxHashSlotNum={slots} and maxIndexNum={entries} make index files of {size:,} bytes (40 + 4 x "
            f"maxHashSlotNum + 20 x maxIndexNum), more than the {JAVA_INT_MAX:,} a broker can compute and map "
            f"(IndexFile sizes are Java ints): use {accepted} (defaults 5000000 and 20000000)")


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


ROCKSDB_STORE_TYPE = "defaultRocksDB"   # StoreType.DEFAULT_ROCKSDB

@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """The subset of ``MessageStoreConfig``/``BrokerConfig`` that decides the bytes of
    ``consumequeue/`` and ``index/``, and the cleanup settings used by the expiry audit."""

    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = 300_000 * CQ_UNIT_SIZE
    # BatchCQ topics' file size (the broker's spelling); not rounded to whole 46-byte units by its getter
    mapperFileSizeBatchConsumeQueue: int = DEFAULT_BCQ_FILE_SIZE
    maxHashSlotNum: int = 5_000_000
    maxIndexNum: int = 5_000_000 * 4
    messageIndexEnable: bool = True
    messageDelayLevel: str = DEFAULT_DELAY_LEVELS
    enableMultiDispatch: bool = False
    enableLmq: bool = False
    enableConsumeQueueExt: bool = False
    mappedFileSizeConsumeQueueExt: int = 48 * 1024 * 1024   # ext file size (not rounded) [MessageStoreConfig]
    enableCalcFilterBitMap: bool = False         # BrokerConfig: ext units with filter bitmaps (refused)
    brokerId: int = 0
    enableDLegerCommitLog: bool = False
    dLegerSelfId: str = "n0"                     # DLedger: the log is dledger-<selfId>/ (store_format.dledger)
    dLegerPeers: str = ""                        # DLedger: the group's peers, ';'-separated (no default)
    storePathDLedgerCommitLog: str = ""          # DLedger: its data folder, when not dledger-<selfId>/data
    duplicationEnable: bool = False
    storeType: str = "default"
    # cleanup (expiry audit) [MessageStoreConfig field defaults, 4.9.8 / 5.3.3 / 5.5.1; the rules that
    # read them are in store_format.expiry]
    fileReservedTime: int = 72
    deleteWhen: str = "04"
    diskMaxUsedSpaceRatio: int = 75
    deleteFileBatchMax: int = 10                 # 5.x only (4.9: MappedFileQueue.DELETE_FILES_BATCH_MAX = 10)
    destroyMapedFileIntervalForcibly: int = 1000 * 120
    cleanFileForciblyEnable: bool = True
    cleanResourceInterval: int = 10_000
    deleteCommitLogFilesInterval: int = 100
    diskSpaceWarningLevelRatio: int = 90         # 5.x only (4.9: system property, default 0.90)
    diskSpaceCleanForciblyRatio: int = 85        # 5.x only (4.9: system property, default 0.85)
    # read by a restart's commitlog recovery and DefaultMessageStore.start (--as-restart, verify);
    # every setting those read is listed in docs/restart-settings.md [MessageStoreConfig, BrokerConfig]
    checkCRCOnRecover: bool = True
    messageIndexSafe: bool = False
    forceVerifyPropCRC: bool = False
    recheckReputOffsetFromCq: bool = False
    enableControllerMode: bool = False
    enableBuildConsumeQueueConcurrently: bool = False
    # 5.5.1: CommitLogDispatcherBuildIndex writes index files only with indexFileWriteEnable; the
    # recovery walks back at most commitLogRecoverMaxNum segments (<= 0: 10)
    indexFileWriteEnable: bool = True
    commitLogRecoverMaxNum: int = 10
    enableAcceleratedRecovery: bool = False
    checkCommitLogOffsetOnRecover: bool = False
    # 5.5.1: extra dispatch stores whose last offsets DefaultMessageStore.recover also takes (refused with
    # enableAcceleratedRecovery after a crash: store_format.recovery)
    indexRocksDBEnable: bool = False
    transRocksDBEnable: bool = False
    # which broker line's reput to mirror where lines differ: "4" (4.9.x), "5" (5.0-5.3), "5.5" (5.5.x:
    # 5.x plus tag keys in the index, see docs/restart-settings.md), or "auto" (decided from the
    # records: see store_format.reput.detect_broker_version; it cannot tell 5.5 from 5.3)
    brokerVersion: str = "auto"
    # not a broker.conf setting: the store's BatchCQ topics (config/topics.json), whose queues go to
    # batchconsumequeue/; always set from the store (store_format.reput.resolve_broker_version)
    batch_topics: frozenset[str] = dataclasses.field(default=frozenset(), metadata={"from_store": True})
    # not a broker.conf setting: False while the walk mirrors a 4.9.8 abnormal recovery's dispatch, which runs
    # before ScheduleMessageService.load parses messageDelayLevel (store_format.recovery.dispatch_config)
    delay_levels_loaded: bool = dataclasses.field(default=True, metadata={"derived": True})
    # not a broker.conf setting: a restart's dispatch on 5.5 with indexRocksDBEnable keeps the store's database,
    # whose lastOffsetPy this is: IndexRocksDBStore.buildIndex skips every record below it
    # (store_format.index_rocksdb.entries_from; 0: none skipped, as in a rebuild into a new database)
    rocksdb_index_from: int = dataclasses.field(default=0, metadata={"derived": True})

    def __post_init__(self) -> None:
        if self.storeType == ROCKSDB_STORE_TYPE and self.enableConsumeQueueExt:
            # only ConsumeQueue reads the setting (it makes the ConsumeQueueExt files); RocksDBConsumeQueueStore
            # makes RocksDBConsumeQueue objects, whose units keep the record's tags code (DispatchEntry.from);
            # load_broker_config says so, once, where it reads the line
            object.__setattr__(self, "enableConsumeQueueExt", False)
        if self.enableConsumeQueueExt and self.enableCalcFilterBitMap:
            raise UnsupportedConfigError(
                "enableConsumeQueueExt=true with enableCalcFilterBitMap=true is not supported: the ConsumeQueueExt "
                "units then hold filter bitmaps computed from the consumers' live SQL92 filters "
                "(CommitLogDispatcherCalcBitMap), which the store does not keep; rebuild with the broker, or set "
                "enableCalcFilterBitMap=false")
        range_error = _range_error({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})
        if range_error:
            raise UnsupportedConfigError(range_error[1])
        if self.brokerVersion not in BROKER_LINES:
            raise UnsupportedConfigError(f"brokerVersion={self.brokerVersion!r}: use 4 (4.9.x), 5 (5.0-5.3), 5.5 "
                                         "(5.5.x) or auto")
        if self.duplicationEnable:
            raise UnsupportedConfigError(
                "duplicationEnable=true: the broker's reput then stops at a confirm offset this project cannot "
                "know; rebuild with the broker, or disable it")
        if self.storeType not in ("default", ROCKSDB_STORE_TYPE):
            raise UnsupportedConfigError(
                f"storeType={self.storeType}: the broker knows default (consume queue files) and "
                f"{ROCKSDB_STORE_TYPE} (a RocksDB consume queue, 5.x; StoreType)")
        if self.rocksdb_cq:
            if self.brokerVersion == "4":
                raise UnsupportedConfigError(
                    f"storeType={ROCKSDB_STORE_TYPE} with brokerVersion=4: the RocksDB consume queue exists in 5.x "
                    "only; pass the broker line the store was written with (5 or 5.5)")
        parse_delay_levels(self.messageDelayLevel)

    def refuse_rocksdb_dledger(self, what: str) -> None:
        """A RocksDB consume queue over a DLedger commitlog (``RocksDBMessageStore`` keeps
        ``DefaultMessageStore``'s ``DLedgerCommitLog``): refuse ``what``, a command or case not modelled for it
        (the restarts modelled: :mod:`store_format.dledger_rocksdb_restart`, and with no DLedger data file yet the
        ordinary RocksDB restart of the old files, ``StoreLocation.dledger_pending``).

        Raises:
            UnsupportedConfigError: one line naming ``what``.
        """
        if self.rocksdb_cq and self.enableDLegerCommitLog:
            raise UnsupportedConfigError(
                f"storeType={ROCKSDB_STORE_TYPE} with enableDLegerCommitLog=true: {what} is not modelled for it (not "
                "checked against the broker); plain rebuild writes its database and index/, verify compares them")

    @property
    def rocksdb_cq(self) -> bool:
        """``storeType=defaultRocksDB``: the consume queues are one RocksDB database in ``consumequeue/``
        (``RocksDBMessageStore``, :mod:`store_format.rocksdb_cq`), not files."""
        return self.storeType == ROCKSDB_STORE_TYPE

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
        """Delay of each level in ms; none while ``delay_levels_loaded`` is False (4.9.8's
        ``ScheduleMessageService.maxDelayLevel`` is still 0: ``checkMessageAndReturnSize`` caps every level
        to 0 and keeps the tags hash)."""
        return parse_delay_levels(self.messageDelayLevel) if self.delay_levels_loaded else ()

    @property
    def empty_index_count(self) -> int:
        """indexCount on disk of an index file nothing was put into (see
        :func:`store_format.indexfile.build_index_array`)."""
        return 1 if self.is_5x else 0

    @property
    def is_master(self) -> bool:
        """A reput that skips past unreadable records: ``enableDLegerCommitLog`` or ``brokerId ==
        MixAll.MASTER_ID`` (``ReputMessageService.doReput``, 4.9.8 and 5.x)."""
        return self.enableDLegerCommitLog or self.brokerId == 0

    @property
    def is_5x(self) -> bool:
        return self.brokerVersion in ("5", "5.5")

    @property
    def dledger_group_of_one(self) -> bool:
        """Whether the DLedger group has one peer (``dLegerPeers``, ';'-separated; none given: not known, False):
        its leader's first commit after a start is then its whole log (``DLedgerEntryPusher.QuorumAckChecker``, its
        own water mark the quorum)."""
        return len([p for p in self.dLegerPeers.split(";") if p.strip()]) == 1

    @property
    def writes_index_files(self) -> bool:
        """Whether the reput writes ``index/`` files: ``CommitLogDispatcherBuildIndex`` calls
        ``IndexService.buildIndex`` with ``messageIndexEnable``, and on 5.5.1 only with
        ``indexFileWriteEnable`` too.  ``messageIndexEnable`` itself stays as broker.conf says: 5.5.1's
        recovery (``IndexService.isMappedFileMatchedRecover``, ``DLedgerCommitLog``) and its RocksDB
        index read it whatever ``indexFileWriteEnable`` says."""
        return self.messageIndexEnable and (self.brokerVersion != "5.5" or self.indexFileWriteEnable)

    @property
    def index_rocksdb(self) -> bool:
        """5.5.1 ``CommitLogDispatcherBuildIndex`` also hands records to ``IndexRocksDBStore``
        (:mod:`store_format.index_rocksdb`): ``messageIndexEnable`` and ``indexRocksDBEnable``, whatever
        ``indexFileWriteEnable`` says."""
        return self.brokerVersion == "5.5" and self.indexRocksDBEnable and self.messageIndexEnable

    @property
    def indexes_tags(self) -> bool:
        """5.5.1 ``IndexService.buildIndex`` also puts ``topic#T#tags`` for a record with tags."""
        return self.brokerVersion == "5.5"

    @property
    def accepts_v2_records(self) -> bool:
        """Whether records with the V2 magic code (5.x, long topics) are readable: not for a broker
        known to be 4.9.x, whose ``checkMessageAndReturnSize`` knows the V1 code only.  A store whose
        line was not given and looked like 4.9.x ("auto") still reads them: nothing says the broker
        could not."""
        return self.brokerVersion != "4"

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, _lines: Mapping[str, int] | None = None,
                        **overrides: object) -> BrokerConfig:
        """Build from broker.conf entries as ``MixAll.properties2Object`` reads them; keys that are no
        field are ignored (:func:`load_broker_config` warns about them).

        Raises:
            UnsupportedConfigError: a whole number the broker cannot parse (it would ignore the line
                and run with its default, not with what the file says), or a value a broker cannot
                work with; the message names the line when ``_lines`` gives it.
        """
        lines = _lines or {}
        kwargs: dict[str, object] = {}
        for field in dataclasses.fields(cls):
            if field.name not in props or field.metadata.get("derived"):
                continue
            if field.metadata.get("from_store"):   # as as_properties writes it (a run's recorded settings)
                kwargs[field.name] = frozenset(t for t in props[field.name].split(",") if t)
                continue
            raw = props[field.name]
            line = lines.get(field.name)
            if field.type in ("int", int):
                kwargs[field.name] = _int_setting(field.name, raw, SETTING_TYPES.get(field.name, "int"),
                                                  field.default, line)
            elif field.type in ("bool", bool):
                if raw.lower() not in ("true", "false"):
                    log.warning("%s%s=%r is read as false by the broker (Boolean.parseBoolean takes only true, "
                                "in any case, and no blanks); write true or false", _where(line), field.name, raw)
                kwargs[field.name] = java_boolean(raw)
            else:
                kwargs[field.name] = raw.strip()
        kwargs.update(overrides)
        values = {f.name: kwargs.get(f.name, f.default) for f in dataclasses.fields(cls)}
        error = _range_error(values)
        if error:
            raise UnsupportedConfigError(f"{_where(lines.get(error[0]))}{error[1]}")
        return cls(**kwargs)  # type: ignore[arg-type]

    def as_properties(self) -> dict[str, str]:
        """The settings as text (a run's recorded settings); ``batch_topics`` comma-separated, only when
        the store has BatchCQ topics (topic names hold no comma: ``TopicValidator``)."""
        props = {f.name: str(getattr(self, f.name)).lower() if isinstance(getattr(self, f.name), bool)
                 else str(getattr(self, f.name)) for f in dataclasses.fields(self)
                 if not f.metadata.get("from_store") and not f.metadata.get("derived")}
        if self.batch_topics:
            props["batch_topics"] = ",".join(sorted(self.batch_topics))
        return props


_JAVA_INT_FIELDS = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "mapperFileSizeBatchConsumeQueue",
                    "maxHashSlotNum", "maxIndexNum",
                    "fileReservedTime", "diskMaxUsedSpaceRatio", "deleteFileBatchMax",
                    "destroyMapedFileIntervalForcibly", "cleanResourceInterval", "deleteCommitLogFilesInterval",
                    "diskSpaceWarningLevelRatio", "diskSpaceCleanForciblyRatio", "mappedFileSizeConsumeQueueExt")
_POSITIVE_FIELDS = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum")
# MessageStoreConfig.getMappedFileSizeConsumeQueue rounds up to whole units in int arithmetic
_MAX_CQ_SETTING = JAVA_INT_MAX // CQ_UNIT_SIZE * CQ_UNIT_SIZE


def _range_error(values: Mapping[str, object]) -> tuple[str, str] | None:
    """(setting, message) for the first value a broker cannot work with, or None."""
    for name in _JAVA_INT_FIELDS:
        v = values[name]
        if isinstance(v, int) and not -JAVA_INT_MAX - 1 <= v <= JAVA_INT_MAX:
            return name, (f"{name}={v} is beyond a Java int (the broker reads it with Integer.parseInt and would "
                          f"ignore it): use a whole number up to {JAVA_INT_MAX}")
    broker_id = values["brokerId"]
    if isinstance(broker_id, int) and not -JAVA_LONG_MAX - 1 <= broker_id <= JAVA_LONG_MAX:
        return "brokerId", f"brokerId={broker_id} is beyond a Java long: use 0 for a master, 1 or more for a slave"
    defaults = {f.name: f.default for f in dataclasses.fields(BrokerConfig)}
    for name in _POSITIVE_FIELDS:
        v = values[name]
        if isinstance(v, int) and v <= 0:
            return name, f"{name}={v} must be a positive number (the broker's default is {defaults[name]})"
    ext_size = values["mappedFileSizeConsumeQueueExt"]
    # a RocksDB consume queue store makes no ext file (BrokerConfig.__post_init__)
    ext = values["enableConsumeQueueExt"] and values["storeType"] != ROCKSDB_STORE_TYPE
    if ext and isinstance(ext_size, int) and ext_size < MIN_EXT_FILE_SIZE:
        return "mappedFileSizeConsumeQueueExt", (
            f"mappedFileSizeConsumeQueueExt={ext_size}: with enableConsumeQueueExt=true an ext file must hold at "
            f"least one {EXT_UNIT_SIZE}-byte unit and {END_BLANK_DATA_LENGTH} free bytes (ConsumeQueueExt.put), so "
            f"at least {MIN_EXT_FILE_SIZE}; the broker's default is {defaults['mappedFileSizeConsumeQueueExt']}")
    max_index = values["maxIndexNum"]
    slots = values["maxHashSlotNum"]
    assert isinstance(max_index, int) and isinstance(slots, int)
    if max_index < 2:
        return "maxIndexNum", ("maxIndexNum must be at least 2 (an index file holds maxIndexNum - 1 entries; "
                               "the broker's default is 20000000)")
    cq = values["mappedFileSizeConsumeQueue"]
    if isinstance(cq, int) and cq > _MAX_CQ_SETTING:
        return "mappedFileSizeConsumeQueue", (
            f"mappedFileSizeConsumeQueue={cq}: rounded up to whole 20-byte units it no longer fits the Java int "
            f"of MessageStoreConfig.getMappedFileSizeConsumeQueue; use at most {_MAX_CQ_SETTING} (default "
            f"{defaults['mappedFileSizeConsumeQueue']})")
    index_error = _index_size_error(slots, max_index)
    if index_error:
        bigger = "maxHashSlotNum" if INDEX_SLOT_SIZE * slots >= INDEX_ENTRY_SIZE * max_index else "maxIndexNum"
        return bigger, index_error
    return None


def load_broker_config(text: str | None, **overrides: object) -> BrokerConfig:
    """Parse broker.conf text (None: all defaults), checking every line first.

    Raises:
        UnsupportedConfigError: a line that is no property, a value the broker would not take for a
            setting this project reproduces, or settings it cannot reproduce; the message names the
            line and what would be accepted.
    """
    if not text:
        return BrokerConfig.from_properties({}, **overrides)  # type: ignore[arg-type]
    entries = read_properties(text)
    _check_entries(entries)
    props = {e.key: e.value for e in entries}
    lines = {e.key: e.line for e in entries}
    config = BrokerConfig.from_properties(props, _lines=lines, **overrides)
    if config.rocksdb_cq and overrides.get("enableConsumeQueueExt", java_boolean(props.get("enableConsumeQueueExt",
                                                                                           "false"))):
        log.warning("%senableConsumeQueueExt=true with storeType=%s: the setting is ignored, as the broker ignores it "
                    "(only file consume queues write consumequeue_ext/)", _where(lines.get("enableConsumeQueueExt")),
                    ROCKSDB_STORE_TYPE)
    return config
