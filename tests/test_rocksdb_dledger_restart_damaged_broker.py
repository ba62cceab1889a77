"""``rebuild --as-restart`` on a RocksDB consume queue (5.x ``storeType=defaultRocksDB``) over a DLedger commitlog
after a crash whose recovery's walk fails at the first entry, or past whose damage the start's reput's own check
refuses a record too (:mod:`store_format.dledger_rocksdb_restart`), checked against the broker's own restart.

The JVM harness (:mod:`broker_harness`) writes :mod:`broker_dledger_scenarios`' ``plain`` messages (60 puts over
three data files) with ``storeType=defaultRocksDB``, keeps the store in ``<dir>/before/`` and restarts the broker
on it after a crash (an ``abort`` file, ``recheckReputOffsetFromCq=true``, DLedger's checkpoint five entries behind)
with the database and ``index/`` deleted:

* ``-crash-damaged-first``: a body byte of the first message flipped: ``dledgerRecoverAbnormally``'s walk (its
  check with CRC) fails at the first data file's first entry and dispatches nothing; ``processOffset`` 0 reaches the
  empty database's 0, but ``RocksDBConsumeQueueStore.truncateDirty`` returns (0 is at least its max 0); the start's
  reput from the min offset (no CRC) dispatches every record once, the damaged one too, and indexes each once;
* ``-crash-damaged-twice``: the 56th message's body byte flipped and the 58th's magic code (both in the last data
  file): the walk ends at the 56th, the reput walks the walk's records again (the last indexed one's keys again),
  the 56th and the 57th, and its own check fails at the 58th: ``doReput`` skips to the end of ``getData``'s buffer,
  the log's end (a group of one, the committed position before it): no unit from there;
* ``-crash-damaged-twice-early``: the 6th message's body byte flipped (first data file) and the 31st's magic code
  (second data file), DLedger's checkpoint 35 entries behind (between the two): the reput's check fails at the 31st
  and goes on at the third data file's start (``getData``'s buffer that reaches it is read once the group of one
  committed its whole log: the second file's end): the rest of the second file gets no unit.

Each case first asserts what the broker's restart did, then that ``rebuild --as-restart`` on ``<dir>/before/``
gives its database's key/value set, both column families entry for entry, and its ``index/`` files byte for byte.
``PIPELINES_FULL_SUITE=1`` adds ``-crash-damaged-first-gap`` (no ``recheckReputOffsetFromCq``: the reput from the
committed position, the records before it dispatched by no one) and ``-converted-crash-damaged-first`` (the
``converted`` store, its first data file's first record damaged: the walk dispatches nothing, and the reput from
the old files' min offset dispatches and indexes every record once, the old ones too).  5.5.1 by default;
``ROCKSDB_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import pytest
import test_rocksdb_dledger_restart_more_broker as more
from broker_rocksdb_runs import (
    as_restart_database_is_the_broker_s,
    as_restart_index_is_the_broker_s,
    database,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
OLD_PUTS = 35   # the converted store's puts before the switch: the next one is the first data file's first record


def _scenarios(line: str) -> list[dict]:
    plain, _, converted = dl.dledger_scenarios(line)[:3]

    def rocks(what: str, *, recheck: bool = True, sc: dict = plain, **knobs: object) -> dict:
        conf = {**sc["config"], "storeType": "defaultRocksDB"}
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**sc, "abort": True, "dledgerCommittedBack": 5, **knobs, "config": conf,
                "name": f"{line}-rocksdb-dledger-{what}"}

    return [rocks("crash-damaged-first", damageMessage=0),
            rocks("crash-damaged-twice", damageMessage=55, damageMagic=57),
            rocks("crash-damaged-twice-early", damageMessage=5, damageMagic=30, dledgerCommittedBack=35),
            rocks("crash-damaged-first-gap", recheck=False, damageMessage=0),
            rocks("converted-crash-damaged-first", sc=converted, damageMessage=OLD_PUTS)]


SCENARIOS = {line: bh.bounded(_scenarios(line), ("-crash-damaged-first-gap", "-converted-crash-damaged-first"))
             for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB DLedger store(s), each restarted", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuild of ``before/`` (every
    scenario written, and rebuilt, once)."""
    return bh.written_once(request, _RUNS, STORES, then=lambda r: r.update(
        rebuild=bh.rebuild_as_restart(Path(r["scenario"]["dir"]), BROKER_LINE[r["line"]])))


def _data_file_end(store: Path, offset: int) -> tuple[int, bool]:
    """The end of the DLedger data file holding ``offset``, and whether it is the last one."""
    files = sorted((store / "dledger-n0" / "data").iterdir())
    ends = [int(f.name) + f.stat().st_size for f in files]
    k = next(i for i, e in enumerate(ends) if int(files[i].name) <= offset < e)
    return ends[k], k == len(files) - 1


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_restart_dispatched(restarted, line: str, name: str) -> None:
    """What the broker's restart wrote, case by case (module docstring): which records have units, where its
    checkpoint key stands, which records its index holds keys of, and which twice."""
    sc, d, w = restarted["scenario"], Path(restarted["scenario"]["dir"]), restarted["written"]
    before = d / "before"
    assert (before / "abort").is_file()
    broker = database(d / "expected" / "consumequeue")
    units = more._units(broker["default"])
    offsets = [u[0] for u in units]
    index = more._index_entries(d / "expected" / "index", int(sc["config"]["maxHashSlotNum"]))
    assert units and index and more._in_order(index)
    assert units[-1][0] + units[-1][1] == more._checkpoint(broker["offset"]), units[-1]
    entries = more._entries(before)
    records = [s + 48 for s, _ in entries]
    end, committed = entries[-1][1], more._committed_pos(before)
    damaged = w["damagedRecord"]
    assert damaged in records and committed < end, (damaged, committed, end)
    indexed = sorted({o for _, o in index})
    if "converted" in name:   # the walk dispatched nothing; the reput from the old files' min offset, 0
        assert damaged == records[0] and 0 < more._old_end(before) == entries[0][0]
        assert offsets[0] == 0 and len([o for o in offsets if o < entries[0][0]]) > 30 and damaged in offsets
        assert indexed[0] == 0 and not any(more._indexed_twice(index, o) for o in indexed), "no key twice"
        assert units[-1][0] + units[-1][1] == end
        return
    if "-first" in name:   # the walk dispatched nothing: its check fails at the first entry
        assert damaged == records[0] == 48
        if name.endswith("-gap"):   # the reput from the committed position: the records before it by no one
            assert offsets == [r for r in records if r >= committed + 48] and committed + 48 > damaged
        else:   # the reput from the min offset: every record once, the damaged one too (its check reads no CRC)
            assert offsets == records and indexed[0] == 48
        assert not any(more._indexed_twice(index, o) for o in indexed), "a record indexed twice"
        assert units[-1][0] + units[-1][1] == end
        return
    magic = w["damagedMagicRecord"]
    assert magic in records and damaged < magic
    last = max(o for o in indexed if o < damaged)   # the walk's last indexed record
    assert more._indexed_twice(index, last), "the walk's last indexed record's keys again"
    assert damaged in offsets and magic not in offsets
    file_end, in_last = _data_file_end(before, magic)
    if name.endswith("-twice"):   # the last data file: the dispatch ends at the bad magic code
        assert committed < magic - 48 and in_last
        assert offsets == [r for r in records if r < magic], (offsets[-3:], magic)
    else:   # a data file before the last: the reput goes on at the next file's start
        assert damaged < committed < magic - 48 and not in_last and file_end + 48 in records
        assert offsets == [r for r in records if not magic <= r < file_end], (magic, file_end)
        assert units[-1][0] + units[-1][1] == end


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_gives_the_broker_s_key_value_set(restarted, line: str, name: str) -> None:
    """Both column families: exactly the keys and values of the database the broker's restart wrote."""
    as_restart_database_is_the_broker_s(restarted)


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_index_files_are_the_broker_s(restarted, line: str, name: str) -> None:
    """``index/``: the broker's restart's files, byte for byte, file by file in order."""
    as_restart_index_is_the_broker_s(restarted)
