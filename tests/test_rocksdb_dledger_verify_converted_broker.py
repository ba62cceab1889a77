"""``verify``'s next-start prediction for a RocksDB consume queue (5.x ``storeType=defaultRocksDB``) over a DLedger
commitlog on a store converted in place (old ``commitlog/`` files before the DLedger data files), the database and
``index/`` kept, checked against the broker's own restart (:mod:`pipelines.verify.rocksdb_dledger_restart`).

The JVM harness (:mod:`broker_harness`) writes :mod:`broker_dledger_scenarios`' ``converted`` messages (the first
ones by a broker without DLedger into old ``commitlog/`` files, the rest into DLedger data files) with
``storeType=defaultRocksDB``, DLedger's checkpoint :data:`BACK` entries behind the log's end
(``dledgerCommittedBack``), keeps the store with its database and ``index/`` (``keepQueues``) in ``<dir>/before/``
after a clean shutdown and restarts the broker on it:

* ``-converted-restart-kept`` (``recheckReputOffsetFromCq=true``): ``dledgerRecoverNormally`` dispatches nothing
  (``truncateDirty`` at the log's end, which the database's checkpoint reaches: nothing past it); the start's reput
  from ``DLedgerCommitLog.getMinOffset``, the first old file's offset 0 (the RocksDB queue table is empty at a
  start), reads the old files through ``CommitLog.getData`` (below ``dividedCommitlogOffset``), rolls over their
  blanks to the data files and goes on to the log's end (the node leads: a group of one commits the entries past
  the checkpoint), putting every unit again under its key with its value: each queue's max entry its last unit, the
  checkpoint key the log's end; ``IndexService.buildIndex`` skips the records below the last index file's
  ``endPhyOffset`` and puts the last indexed record's keys again;
* ``-converted-restart-kept-norecheck`` (without it): the start's reput from DLedger's committed position (the old
  files never read) to the log's end.

Each case first asserts what the broker's restart wrote, then ``verify``'s report on ``before/`` queue by queue
against the broker's database.  5.5.1 by default; ``ROCKSDB_MORE_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_runs import _committed_pos

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_MORE_LINES", "5.5.1")
BACK = 5    # entries DLedger's checkpoint is behind the log's end


def _scenarios(line: str) -> list[dict]:
    converted = dl.dledger_scenarios(line)[2]

    def rocks(what: str, *, recheck: bool = True, **knobs: object) -> dict:
        conf = {**converted["config"], "storeType": "defaultRocksDB"}
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**converted, "keepBefore": True, "keepQueues": True, "dledgerCommittedBack": BACK, **knobs,
                "config": conf, "name": f"{line}-rocksdb-dledger-{what}"}

    return [rocks("converted-restart-kept"),
            rocks("converted-restart-kept-norecheck", recheck=False, restartRebuildsNothing=True)]


SCENARIOS = {line: _scenarios(line) for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB DLedger converted store(s), each restarted", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``verify`` of ``before/`` (every scenario written,
    and verified, once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked)


def _log_end(store: Path) -> int:
    """DLedger's log end in ``store``: the end of the last entry its ``index/`` holds."""
    units = b"".join(p.read_bytes() for p in sorted((store / "dledger-n0" / "index").iterdir()))
    last = max(i for i in range(len(units) // 32) if int.from_bytes(units[32 * i:32 * i + 4], "big") != 0)
    return int.from_bytes(units[32 * last + 4:32 * last + 12], "big") \
        + int.from_bytes(units[32 * last + 12:32 * last + 16], "big")


def _old_end(store: Path) -> int:
    """The end of the last old ``commitlog/`` file."""
    old = sorted((store / "commitlog").iterdir())
    return int(old[-1].name) + old[-1].stat().st_size


def _parsed(db: Path):  # noqa: ANN202
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    return parse_database(read_store_database(str(db)))


def _pair(e) -> tuple[int, int] | None:  # noqa: ANN001
    return None if e is None else (int(e[0]), int(e[1]))


def _index_entries(folder: Path, slots: int) -> list[tuple[bytes, int]]:
    """(key hash, commitlog offset) of every index entry, file by file in put order."""
    out = []
    for f in sorted(p for p in folder.iterdir() if p.name.isdigit()):
        data = f.read_bytes()
        count, at = int.from_bytes(data[36:40], "big"), 40 + 4 * slots
        out += [(data[at + 20 * i:at + 20 * i + 4], int.from_bytes(data[at + 20 * i + 4:at + 20 * i + 12], "big"))
                for i in range(1, count)]
    return out


def _twice_at_old_end(index: list[tuple[bytes, int]], old_end: int) -> int:
    """How many keys the last indexed record of the old files has twice in a row in ``index`` (its entries two equal
    halves; 0: not so)."""
    last = max(o for _, o in index if o < old_end)
    mine = [e for e in index if e[1] == last]
    half = len(mine) // 2
    return half if half and len(mine) % 2 == 0 and mine[:half] == mine[half:] else 0


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_restart_put_the_units_again(restarted, line: str, name: str) -> None:
    """What the broker's restart did on the converted store kept after a clean shutdown: the old files' records and
    the data files' in the database before and after, its units unchanged, the checkpoint key at the log's end, and
    the index grown by the keys of the last indexed record alone (put again)."""
    sc, d = restarted["scenario"], Path(restarted["scenario"]["dir"])
    before_dir = d / "before"
    assert not (before_dir / "abort").exists() and (before_dir / "commitlog").is_dir()
    old_end, end, committed = _old_end(before_dir), _log_end(before_dir), _committed_pos(before_dir)
    assert 0 < old_end < committed < end, (old_end, committed, end)
    assert restarted["written"]["dledgerCommittedPos"] == end   # the broker's node led and committed them
    before, cp_before = _parsed(before_dir / "consumequeue")
    after, cp_after = _parsed(d / "expected" / "consumequeue")
    assert cp_before == end == cp_after, (cp_before, cp_after, end)
    phys = np.concatenate([q.phy for q in before.values()])
    assert phys.min() == 0 and (phys < old_end).sum() > 30 and (phys > old_end).sum() > 0
    assert set(after) == set(before)
    for queue, b in before.items():
        a = after[queue]
        assert np.array_equal(a.cq, b.cq) and np.array_equal(a.phy, b.phy), f"{queue}: units changed"
    slots = int(sc["config"]["maxHashSlotNum"])
    old_ix, new_ix = _index_entries(before_dir / "index", slots), _index_entries(d / "expected" / "index", slots)
    assert new_ix[:len(old_ix)] == old_ix and old_ix[0][1] == 0 and len(new_ix) > len(old_ix)
    assert new_ix[len(old_ix):] == [e for e in old_ix if e[1] == old_ix[-1][1]], \
        "other keys than the last indexed record's put again"
    # the store's first start with DLedger: its reput from the old files' 0 put the last old indexed record's keys
    # again (recheckReputOffsetFromCq), or from the committed position did not
    recheck = sc["config"].get("recheckReputOffsetFromCq") == "true"
    assert (_twice_at_old_end(old_ix, old_end) > 0) == recheck


@pytest.mark.parametrize("line,name", CASES)
def test_verify_predicts_the_restart(restarted, line: str, name: str) -> None:
    """``verify`` on ``before/``: the database identical to its rebuild (read to the log's end), and the prediction
    of the broker's restart queue by queue: max and min entries after, the checkpoint, the start's reput (from the old
    files' 0, or the committed position) and the index keys it puts again."""
    d = Path(restarted["scenario"]["dir"])
    before, cp_before = _parsed(d / "before" / "consumequeue")
    after, cp_after = _parsed(d / "expected" / "consumequeue")
    end, committed = _log_end(d / "before"), _committed_pos(d / "before")
    v = restarted["verify"]
    assert v["report"] is not None, v["stderr"]
    report = v["report"]
    counts = report["counts"]
    assert counts["rocksdb_consume_queue"]["identical"] > 0 and counts["rocksdb_consume_queue"]["differs"] == \
        counts["rocksdb_consume_queue"]["missing"] == counts["rocksdb_consume_queue"]["extra"] == 0, counts
    # index/: the store's history, not a rebuild's: its first start with DLedger (the reput from the old files' 0)
    # put the last old indexed record's keys again, so the store has them twice, the rebuild once
    slots = int(restarted["scenario"]["config"]["maxHashSlotNum"])
    twice = _twice_at_old_end(_index_entries(d / "before" / "index", slots), _old_end(d / "before"))
    if twice:
        (ix,) = report["index"]
        assert ix["status"] == "differs" and ix["differing_header_fields"] == ["index_count"], ix
        assert ix["found_header"]["index_count"] - ix["expected_header"]["index_count"] == twice, ix
    else:
        assert report["identical"], report["summary"]
    p = report["restart"]
    assert p is not None and p["rocksdb"], report.get("restart_note") or report.get("no_prediction")
    assert p["recovery_cut"] == p["commitlog_end"] == end
    assert any("it assumes the node leads" in n for n in p["notes"]), p["notes"]
    assert any("truncateDirty there" in n for n in p["notes"]), p["notes"]
    assert p["rocksdb_checkpoint_before"] == cp_before and p["rocksdb_checkpoint_after"] == cp_after
    assert not p["truncate_dirty_logic_files"] and p["units_lost"] == p["units_truncated"] == 0
    recheck = restarted["scenario"]["config"].get("recheckReputOffsetFromCq") == "true"
    assert p["second_reput_from"] == (0 if recheck else committed), (p["second_reput_from"], committed)
    if recheck:
        assert any("the old commitlog/ files first" in n for n in p["notes"]), p["notes"]
    grown = len(_index_entries(d / "expected" / "index", slots)) - len(_index_entries(d / "before" / "index", slots))
    assert grown > 0 and grown == p["index_keys_put_again"], \
        f"the broker's index gained {grown} key(s), verify says {p['index_keys_put_again']}"
    listed = {q["queue"]: q for q in p["queues"]}
    assert set(listed) <= set(before) | set(after)
    for queue in sorted(set(before) | set(after)):
        b, a = before.get(queue), after.get(queue)
        got = (_pair(a.max), _pair(a.min)) if a is not None else (None, None)
        q = listed.get(queue)
        if q is None:
            assert got == ((_pair(b.max), _pair(b.min)) if b is not None else (None, None)), \
                f"{queue}: not listed by verify, but the broker changed its entries {got}"
            continue
        assert got == (_pair(q["max_entry_after"]), _pair(q["min_entry_after"])), (queue, got, q)
        above = int((a.cq > a.max[1]).sum()) if a is not None and a.max is not None else 0
        assert above == q["units_truncated"], (queue, above, q)


@pytest.mark.parametrize("line,name", CASES[:1])
def test_verify_refuses_the_crash_restart_of_the_converted_store(restarted, line: str, name: str,
                                                                 tmp_path: Path) -> None:
    """The converted store kept, with an ``abort`` file added: a crash over the database kept stays unpredicted
    (``dledgerRecoverAbnormally``'s ``truncateDirty`` races the walk's dispatch, module
    :mod:`pipelines.verify.rocksdb_dledger_restart`): one line in the report, the comparison still made."""
    import shutil
    d = Path(restarted["scenario"]["dir"])
    store = tmp_path / "store"
    shutil.copytree(d / "before", store)
    (store / "abort").touch()
    v = bh.verify_json(store, d / "broker.conf", bh.BROKER_VERSION_ARG[line])
    assert v["report"] is not None, v["stderr"]
    note = v["report"]["restart_note"]
    assert v["report"]["restart"] is None and "after a crash (abort file) over the database kept" in note, note
    assert "\n" not in note and v["report"]["counts"]["rocksdb_consume_queue"]["identical"] > 0, v["report"]["counts"]
