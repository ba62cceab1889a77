"""Shared steps of the RocksDB consume queue broker modules (``tests/test_rocksdb_cq_broker.py``,
``tests/test_rocksdb_cq_layouts_broker.py``): every scenario of the lines written by the broker, rebuilt by us,
and its database and index read back by the broker's own ``Reader``, the broker's files and ours
(``write_rebuild_read``); a copy of a store with the broker's own database (``store_with_broker_db``) and damage done
to one (``damage_database``) for the verify and repair checks.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import broker_harness as bh
import pytest
from broker_scenarios import query_pairs


def read_request(d: Path, which: str, work: Path, pairs: list[tuple[str, str]], queues: bool = True) -> dict:
    """A Reader request on a copy of the store with the broker's (``expected``) or our (``ours``) consume queue and
    index; the index answers every (topic, key) of ``pairs`` too, the queues unless ``queues`` is false."""
    copy = work / f"read-{d.name}-{which}"
    shutil.rmtree(copy, ignore_errors=True)
    bh.copy_store(d / "store", copy)
    bh.copy_store(d / which / "consumequeue", copy / "consumequeue")
    bh.copy_store(d / which / "index", copy / "index")
    return {"store": copy, "config": bh.read_conf(d / "broker.conf"), "rocksdb": True, "queues": queues,
            "queries": pairs}


def stores(scenarios: dict[str, list[dict]]) -> bh.Stores:
    """A RocksDB module's stores, one at a time in each JVM (RocksDB stores written in threads crashed the JVM)."""
    return bh.Stores(scenarios, "RocksDB consume queue store(s)", threads=1)


def write_rebuild_read(request, work: Path, stores: bh.Stores, runs: dict[str, dict],  # noqa: ANN001
                       rebuild: Callable[[Path, str], dict], queues: Callable[[Path], bool] = lambda d: True) -> None:
    """Fill ``runs`` (scenario name -> ``dir``, ``written``, ``scenario``, ``rebuild``, ``answers``): the broker
    writes every scenario of ``stores`` (:func:`stores`), ``rebuild(dir, line)`` rebuilds each it wrote, and one
    JVM per line reads the broker's files and ours of each rebuilt, one store after the other."""
    written = bh.write_lines(request, stores, work)
    for n, w in written.items():
        r = runs[n] = {"dir": Path(w["scenario"]["dir"]), "written": w["written"], "scenario": w["scenario"]}
        if r["written"].get("ok"):
            r["rebuild"] = rebuild(r["dir"], w["line"])
    for ln, scs in stores.scenarios.items():
        ok = [(runs[sc["name"]]["dir"], query_pairs(sc)) for sc in scs
              if runs[sc["name"]]["written"].get("ok") and runs[sc["name"]]["rebuild"]["code"] == 0]
        answers = bh.read_stores(ln, [read_request(d, w, work, pairs, queues(d)) for d, pairs in ok
                                      for w in ("expected", "ours")], work)
        for i, (d, _pairs) in enumerate(ok):
            runs[d.name]["answers"] = {"expected": answers[2 * i], "ours": answers[2 * i + 1]}


def run_of(runs: dict[str, dict], name: str) -> dict:
    """The scenario's run, failing the test where the broker's writer or our rebuild failed."""
    r = runs[name]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {name}: {r['written'].get('error')}")
    assert r["rebuild"]["code"] == 0, r["rebuild"]["stderr"][-2000:]
    return r


def store_with_broker_db(run: dict, tmp_path: Path) -> Path:
    """A copy of the store with the broker's own database and index/ (its rebuild) in place of its top-level
    ``consumequeue/`` and ``index/`` (a DLedger folder's own ``index/`` stays)."""
    d = run["dir"]
    store = tmp_path / "store"
    top = d / "store"
    shutil.copytree(top, store, ignore=lambda folder, names: [n for n in names if Path(folder) == top
                                                              and n in ("consumequeue", "index")])
    shutil.copytree(d / "expected" / "index", store / "index")
    shutil.copytree(d / "expected" / "consumequeue", store / "consumequeue")
    return store


def damage_database(run: dict, db_dir: Path) -> tuple[dict, dict, int]:
    """In the database at ``db_dir``: a unit deleted and one changed in one queue, a max entry gone in
    another; returns both queues' answers and the deleted unit's queue offset."""
    import rocksdict as rd

    from store_format.rocksdb_cq import OFFSET_FAMILY, cq_key, offset_key

    queues = [a for a in run["answers"]["expected"] if a["kind"] == "queue" and len(a["messages"]) >= 2]
    first, second = queues[0], queues[1]
    db = rd.Rdict(str(db_dir), options=rd.Options(raw_mode=True),
                  column_families={OFFSET_FAMILY: rd.Options(raw_mode=True)})
    try:
        default = db.get_column_family("default")
        q0, q1 = first["messages"][0][0], first["messages"][1][0]
        del default[cq_key(first["topic"], first["queueId"], q0)]
        k1 = cq_key(first["topic"], first["queueId"], q1)
        default[k1] = bytes(8) + default[k1][8:]        # commitlog offset 0
        del db.get_column_family(OFFSET_FAMILY)[offset_key(second["topic"], second["queueId"])]
    finally:
        db.close()
    return first, second, q0


def database(db: Path) -> dict[str, dict[bytes, bytes]]:
    """Both column families of a RocksDB consume queue (``default``, ``offset``), read from a copy."""
    from pipelines.verify.rocksdb_compare import read_store_database
    return {family: dict(entries) for family, entries in read_store_database(str(db)).items()}


def same_databases(broker_db: Path, ours_db: Path) -> dict[str, dict[bytes, bytes]]:
    """Assert both column families of our database hold exactly the broker's keys and values; the broker's."""
    broker, ours = database(broker_db), database(ours_db)
    assert sorted(broker) == sorted(ours) == ["default", "offset"]
    for family, e in broker.items():
        o = ours[family]
        missing, extra = sorted(set(e) - set(o)), sorted(set(o) - set(e))
        assert not missing and not extra, (f"{family}: keys only the broker has {[k.hex() for k in missing[:3]]} "
                                           f"({len(missing)}), only ours {[k.hex() for k in extra[:3]]} ({len(extra)})")
        wrong = [k for k in e if e[k] != o[k]]
        assert not wrong, f"{family}: {len(wrong)} value(s) differ, first key {wrong[0].hex()}: " \
                          f"{e[wrong[0]].hex()} vs {o[wrong[0]].hex()}"
    return broker


def as_restart_database_is_the_broker_s(run: dict) -> str:
    """Our ``rebuild --as-restart`` of a restarted scenario (``run["rebuild"]``, :func:`broker_harness.restart_checked`)
    wrote the database of the broker's restart, key for key and value for value in both column families (the test
    fails with the rebuild's error lines where it exited non-zero); what it printed on stderr."""
    d = bh.rebuilt_dir(run)
    same_databases(d / "expected" / "consumequeue", d / "ours" / "consumequeue")
    return run["rebuild"]["stderr"]


def as_restart_index_is_the_broker_s(run: dict) -> None:
    """Our ``rebuild --as-restart`` wrote the broker's restart's ``index/`` files, byte for byte, file by file in name
    order (a file's name is the writer's clock when it made it)."""
    d = bh.rebuilt_dir(run)
    exp, ours = sorted((d / "expected" / "index").iterdir()), sorted((d / "ours" / "index").iterdir())
    assert exp and len(ours) == len(exp)
    for i, (e, o) in enumerate(zip(exp, ours)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


def _entry(e) -> tuple[int, int] | None:  # noqa: ANN001
    return None if e is None else (int(e[0]), int(e[1]))


def queues_as_predicted(before: dict, after: dict, listed: dict[str, dict]) -> None:
    """Every queue of the database before and after the broker's restart (``parse_database``'s) as ``verify``
    predicted it (``listed``: its report's queues by name): one it does not list unchanged; one it lists with the
    max/min entries it predicts (or those of the race it names) and as many units above the max as it says truncated
    there; one it lists that neither holds without entries (or a race without)."""
    for queue in sorted(set(before) | set(after)):
        b, a = before.get(queue), after.get(queue)
        got = (_entry(a.max), _entry(a.min)) if a is not None else (None, None)
        q = listed.get(queue)
        if q is None:
            assert got == ((_entry(b.max), _entry(b.min)) if b is not None else (None, None)), \
                f"{queue}: not listed by verify, but the broker changed its entries {got}"
            continue
        options = {(_entry(q["max_entry_after"]), _entry(q["min_entry_after"])): q["units_truncated"]}
        if q["race_max_entry_after"] is not None or q["race_min_entry_after"] is not None:
            options[(_entry(q["race_max_entry_after"]), _entry(q["race_min_entry_after"]))] = q["race_units_truncated"]
        assert got in options, f"{queue}: the broker's max/min entries {got}, verify predicted {list(options)}"
        above = int((a.cq > a.max[1]).sum()) if a is not None and a.max is not None else 0
        assert above == options[got], f"{queue}: {above} unit(s) above the max, verify says {options[got]}"
    for queue in sorted(set(listed) - set(before) - set(after)):   # listed by verify, not in the broker's database
        q = listed[queue]
        options = [(_entry(q["max_entry_after"]), _entry(q["min_entry_after"]))]
        if q["race_max_entry_after"] is not None or q["race_min_entry_after"] is not None:
            options.append((_entry(q["race_max_entry_after"]), _entry(q["race_min_entry_after"])))
        assert (None, None) in options, f"{queue}: not in the broker's database, verify predicted entries {options}"


def parsed_database(db: Path):  # noqa: ANN201
    """A RocksDB consume queue folder as ``parse_database`` reads it: its queues and its checkpoint."""
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    return parse_database(read_store_database(str(db)))


def kept_database_as_predicted(r: dict) -> tuple[dict, dict[str, dict]]:
    """``verify``'s restart prediction of a run whose store was restarted with its RocksDB database kept (``verify`` ran
    on ``<dir>/before``, the broker restarted a copy into ``<dir>/expected``), checked: the cut at the commitlog's end
    the broker left, the database's checkpoint before and after (or the race's) and every queue
    (:func:`queues_as_predicted`).  Returns the prediction and its queues by name."""
    d = Path(r["scenario"]["dir"])
    report = r["verify"]["report"]
    assert report is not None, r["verify"]["stderr"]
    p = report["restart"]
    assert p is not None and p["rocksdb"], report.get("restart_note")
    assert p["recovery_cut"] == p["commitlog_end"] == r["written"]["maxPhyOffset"]
    before, cp_before = parsed_database(d / "before" / "consumequeue")
    after, cp_after = parsed_database(d / "expected" / "consumequeue")
    assert p["rocksdb_checkpoint_before"] == cp_before
    assert cp_after in (p["rocksdb_checkpoint_after"], p["race_checkpoint_after"]), (cp_after, p)
    listed = {q["queue"]: q for q in p["queues"]}
    queues_as_predicted(before, after, listed)
    return p, listed


def added_units(d: Path) -> dict[bytes, bytes]:
    """The default family's keys and values the broker's restart added to a kept database (``<d>/before`` the store
    it restarted, ``<d>/expected`` after), checked to have changed or removed none of the first life's."""
    units_before = database(d / "before" / "consumequeue")["default"]
    units_after = database(d / "expected" / "consumequeue")["default"]
    assert all(units_after[k] == v for k, v in units_before.items()), "a first-life unit changed or went"
    return {k: v for k, v in units_after.items() if k not in units_before}


def walked_units_as_entries(r: dict) -> dict[bytes, bytes]:
    """The units ``verify`` puts for a 5.5.1 accelerated walk over a planted message
    (:func:`store_format.restart_reput.walk_units` from the run's ``plantedAt`` to the commitlog's end, on
    ``<dir>/before``) as the default family's keys and values, checked to hold no unmodelled unit."""
    from store_format.config import load_broker_config
    from store_format.reput import resolve_broker_version
    from store_format.restart_reput import walk_units
    from store_format.rocksdb_cq import cq_key, cq_value
    from store_format.store import open_store
    d, w = Path(r["scenario"]["dir"]), r["written"]
    config = load_broker_config((d / "broker.conf").read_text(), brokerVersion="5.5")
    st = open_store(str(d / "before"), config)
    seg = st.segment_at(w["plantedAt"])
    assert seg is not None
    u = walk_units(st, seg, w["plantedAt"], w["maxPhyOffset"], resolve_broker_version(st, config))
    assert not u.unmodelled, u.unmodelled
    out = {}
    for i, queue in enumerate(u.queue):
        topic, qid = queue.rsplit("/", 1)
        out[cq_key(topic, int(qid), int(u.queue_offset[i]))] = cq_value(
            int(u.phy[i]), int(u.size[i]), int(u.tags_code[i]), int(u.store_timestamp[i]))
    return out
