"""``rebuild --as-restart`` on a RocksDB consume queue (5.x ``storeType=defaultRocksDB``) over a DLedger commitlog,
checked against the broker's own restart, more shapes than tests/test_rocksdb_dledger_restart_broker.py
(:mod:`store_format.dledger_rocksdb_restart`): a crash walk that ends at a damaged message, and a store converted
in place (old ``commitlog/`` files before the DLedger data, or none yet).

The JVM harness (:mod:`broker_harness`) writes :mod:`broker_dledger_scenarios`' ``plain`` and ``converted``
messages with ``storeType=defaultRocksDB``, keeps the store in ``<dir>/before/`` and restarts the broker on it with
the database and ``index/`` deleted:

* ``-crash-damaged``: the ``plain`` store with a body byte of its 56th message (in the last data file) flipped and
  DLedger's checkpoint five entries behind, after a crash (``recheckReputOffsetFromCq``): the walk ends at the
  damaged message, the start's reput from the min offset walks the walk's records again, then the damaged
  message and the rest (no CRC check): every record's unit, the walk's last indexed record's keys again between;
* ``-crash-damaged-gap``: the same without ``recheckReputOffsetFromCq``, DLedger's checkpoint two entries behind:
  the reput from the committed position, past the damage, so the records between are dispatched by no one;
* ``-converted-crash``: the ``converted`` store (old ``commitlog/`` files, then DLedger data files) after a crash:
  the walk over the data files, then the reput from the old files' min offset: their records (below the index's
  ``endPhyOffset``: no key), then the data files' records again;
* ``-first-start-crash``: the ``converted`` store's old files alone, restarted with DLedger on for the first time
  after a crash: the base ``CommitLog``'s abnormal recovery of the old files (``isInrecoveringOldCommitlog``).

Each case first asserts what the broker's restart did, then that ``rebuild --as-restart`` on ``<dir>/before/``
gives its database's key/value set, both column families entry for entry, and its ``index/`` files byte for byte.
``PIPELINES_FULL_SUITE=1`` adds ``-crash-damaged-again`` (no switch, the checkpoint seven entries behind: the reput
from the committed position before the damage), ``-crash-damaged-end`` (no switch, the log all committed: nothing
after the damage), ``-converted-restart`` (a clean restart, the reput from the old files' min offset),
``-converted-crash-norecheck`` (the reput from the committed position: the old files never read) and
``-first-start-restart`` (the old files' normal recovery).  5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1`` adds
5.3.3.
"""
from __future__ import annotations

from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import pytest
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
DAMAGED = 55   # the put whose body byte is flipped (the 56th message, in the last data file)


def _scenarios(line: str) -> list[dict]:
    plain, _, converted = dl.dledger_scenarios(line)[:3]
    switch = next(i for i, m in enumerate(converted["messages"]) if "switchToDLedger" in m)
    old_only = {**converted, "messages": converted["messages"][:switch + 1]}

    def rocks(sc: dict, what: str, *, recheck: bool = True, **knobs: object) -> dict:
        conf = {**sc["config"], "storeType": "defaultRocksDB"}
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**sc, **knobs, "config": conf, "name": f"{line}-rocksdb-dledger-{what}"}

    return [rocks(plain, "crash-damaged", abort=True, damageMessage=DAMAGED, dledgerCommittedBack=5),
            rocks(plain, "crash-damaged-gap", recheck=False, abort=True, damageMessage=DAMAGED,
                  dledgerCommittedBack=2),
            rocks(converted, "converted-crash", abort=True, dledgerCommittedBack=5),
            rocks(old_only, "first-start-crash", abort=True),
            rocks(plain, "crash-damaged-again", recheck=False, abort=True, damageMessage=DAMAGED,
                  dledgerCommittedBack=7),
            rocks(plain, "crash-damaged-end", recheck=False, abort=True, damageMessage=DAMAGED),
            rocks(converted, "converted-restart", keepBefore=True, dledgerCommittedBack=5),
            rocks(converted, "converted-crash-norecheck", recheck=False, abort=True, dledgerCommittedBack=5),
            rocks(old_only, "first-start-restart", keepBefore=True)]


# -crash-damaged with the full suite only: test_rocksdb_dledger_restart_damaged_broker's -crash-damaged-twice walks the
# walk's records again from the min offset past the damaged message too
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-crash-damaged-again", "-crash-damaged-end", "-converted-restart",
                                                 "-converted-crash-norecheck", "-first-start-restart",
                                                 "-dledger-crash-damaged"))
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


def _index_units(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((store / "dledger-n0" / "index").iterdir()))


def _committed_pos(store: Path) -> int:
    """DLedger's committed position in ``store``: the end of the entry its ``checkpoint`` names."""
    index = int(bh.read_conf(store / "dledger-n0" / "checkpoint")["committedIndex"])
    unit = _index_units(store)[index * 32:index * 32 + 32]
    assert int.from_bytes(unit[16:24], "big") == index, (index, unit.hex())
    return int.from_bytes(unit[4:12], "big") + int.from_bytes(unit[12:16], "big")


def _entries(store: Path) -> list[tuple[int, int]]:
    """(start, end) of every entry DLedger's ``index/`` holds, in order."""
    units = _index_units(store)
    out = []
    for i in range(len(units) // 32):
        u = units[32 * i:32 * i + 32]
        if int.from_bytes(u[:4], "big") != 0:
            pos, size = int.from_bytes(u[4:12], "big"), int.from_bytes(u[12:16], "big")
            out.append((pos, pos + size))
    return out


def _units(default: dict[bytes, bytes]) -> list[tuple[int, int]]:
    """(commitlog offset, size) of every unit of a ``default`` family, in commitlog order."""
    return sorted((int.from_bytes(v[:8], "big"), int.from_bytes(v[8:12], "big")) for v in default.values())


def _checkpoint(offset: dict[bytes, bytes]) -> int:
    from store_format.rocksdb_cq import checkpoint_key
    return int.from_bytes(offset[checkpoint_key()], "big")


def _index_entries(index_dir: Path, slots: int) -> list[tuple[bytes, int]]:
    """(key hash, commitlog offset) of every index entry, file by file in put order."""
    out = []
    for f in sorted(p for p in index_dir.iterdir() if p.name.isdigit()):
        data = f.read_bytes()
        count = int.from_bytes(data[36:40], "big")
        at = 40 + 4 * slots
        out += [(data[at + 20 * i:at + 20 * i + 4], int.from_bytes(data[at + 20 * i + 4:at + 20 * i + 12], "big"))
                for i in range(1, count)]
    return out


def _old_end(store: Path) -> int:
    """The end of the last old ``commitlog/`` file (0: none)."""
    old = sorted((store / "commitlog").iterdir()) if (store / "commitlog").is_dir() else []
    return int(old[-1].name) + old[-1].stat().st_size if old else 0


def _indexed_twice(index: list[tuple[bytes, int]], offset: int) -> bool:
    """Whether the record at ``offset`` has its keys put twice in a row (its entries two equal halves)."""
    mine = [e for e in index if e[1] == offset]
    return len(mine) >= 2 and len(mine) % 2 == 0 and mine[:len(mine) // 2] == mine[len(mine) // 2:]


def _in_order(index: list[tuple[bytes, int]]) -> bool:
    """Whether the index's entries go by commitlog offset, each record's together (no record indexed later again
    but right after itself)."""
    offsets = [o for _, o in index]
    return offsets == sorted(offsets)


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_restart_dispatched(restarted, line: str, name: str) -> None:
    """What the broker's restart wrote, case by case (module docstring): where its units begin and end, which
    records have none, where its checkpoint key stands, which records its index holds keys of, and which twice."""
    sc, d, w = restarted["scenario"], Path(restarted["scenario"]["dir"]), restarted["written"]
    before = d / "before"
    assert (before / "abort").is_file() == bool(sc.get("abort"))
    broker = database(d / "expected" / "consumequeue")
    units = _units(broker["default"])
    offsets = [u[0] for u in units]
    index = _index_entries(d / "expected" / "index", int(sc["config"]["maxHashSlotNum"]))
    assert units and index and _in_order(index)
    assert units[-1][0] + units[-1][1] == _checkpoint(broker["offset"]), (units[-1], _checkpoint(broker["offset"]))
    if "first-start" in name:   # no DLedger data yet: the old files' recovery, the reput from their min offset 0
        assert not (before / "dledger-n0").exists() and (d / "expected").is_dir()
        end = _old_end(before)
        assert offsets[0] == 0 and units[-1][0] + units[-1][1] < end == w["dividedCommitlogOffset"], (units[-1:], w)
        # the record at 0: indexed by the abnormal recovery's dispatch, left to the reput (below endPhyOffset) after
        # the normal one's
        assert (index[0][1] == 0) == name.endswith("-crash"), index[:1]
        return
    entries = _entries(before)
    end, committed = entries[-1][1], _committed_pos(before)
    assert committed < end or name.endswith("-damaged-end"), (committed, end)
    if "converted" in name:
        old_end = _old_end(before)
        assert 0 < old_end == entries[0][0] and units[-1][0] + units[-1][1] == end
        last = index[-1][1]
        if name.endswith("-norecheck"):   # the reput from the committed position: the old files never read
            assert offsets[0] == old_end + 48 and _indexed_twice(index, last)
        elif name.endswith("-crash"):   # their records from offset 0, below the walk's endPhyOffset: no key
            assert offsets[0] == 0 and len([o for o in offsets if o < old_end]) > 30
            assert index[0][1] >= old_end and _indexed_twice(index, last), "an old record indexed"
        else:   # a clean restart: the reput from 0 indexes every record once
            assert offsets[0] == 0 and index[0][1] == 0 and not _indexed_twice(index, last)
        return
    damaged = w["damagedRecord"]
    assert any(s + 48 == damaged for s, _ in entries), damaged
    last = max(o for _, o in index if o < damaged)   # the walk's last indexed record
    assert offsets[0] == 48
    if name.endswith("-damaged-gap"):   # the reput from the committed position, past the damage
        assert damaged < committed < end
        assert not any(damaged <= o < committed for o in offsets) and committed + 48 in offsets
        assert units[-1][0] + units[-1][1] == end and not _indexed_twice(index, last)
    elif name.endswith("-damaged-end"):   # from the log's end: nothing after the damage
        assert committed == end
        assert units[-1][0] + units[-1][1] == damaged - 48 and not _indexed_twice(index, last)
    else:   # -damaged (the min offset) and -damaged-again (the committed position before the damage)
        assert committed < damaged - 48 if name.endswith("-again") else committed == damaged - 48, (committed, damaged)
        assert damaged in offsets and units[-1][0] + units[-1][1] == end
        assert _indexed_twice(index, last) and index[-1][1] > damaged, \
            "the walk's last indexed record's keys again, then the records past the damage"


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_gives_the_broker_s_key_value_set(restarted, line: str, name: str) -> None:
    """Both column families: exactly the keys and values of the database the broker's restart wrote."""
    as_restart_database_is_the_broker_s(restarted)


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_index_files_are_the_broker_s(restarted, line: str, name: str) -> None:
    """``index/``: the broker's restart's files, byte for byte, file by file in order."""
    as_restart_index_is_the_broker_s(restarted)
