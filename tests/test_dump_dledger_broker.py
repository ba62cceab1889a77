"""``python -m pipelines dump`` on DLedger data and index files (``dledger-n0/data/``, ``index/``) that the
broker's ``DLedgerCommitLog`` wrote through the JVM harness in ``tests/broker/``, checked against what the
broker says of the same store, never against our own decoder:

* the entries' indexes run from the log's begin index to its end index and the last one ends at the
  committed position, as the writer reports them from the broker's ``DLedgerServer`` after its restart
  and as the broker's store (``harness.Reader``) gives its ``maxPhyOffset``;
* every message the broker's ``getMessage`` returns from every queue (after the broker rebuilt the queues
  from the DLedger log) is a dumped record with its commitlog offset, size, topic, queue id and queue
  offset, and no other dumped record was dispatched to a queue;
* every key and unique key asked through the broker's ``queryMessage`` gives the dumped records that
  carry it;
* with the log's checkpoint moved back seven entries, the records the dump marks ``not_committed`` start
  where the broker's store, loaded on that checkpoint, ends its commitlog;
* the units of DLedger's own index file point at the dumped entries.

The scenarios are :mod:`broker_dledger_scenarios`' ``plain`` (single messages, keys, tags; a V2 record on
5.x) and ``mixed`` (batches, delayed messages, transactions), over two or more 64 KiB data files, each
but the last ending in a DLedger blank.  Lines: ``DUMP_DLEDGER_LINES`` (default 5.5.1; ``4.9.8,5.5.1`` adds
the 4.9.8 broker's DLedger, the same 48-byte entry layout, for some 30 s more of the suite).
"""
from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_scenarios import dledger_scenarios
from broker_scenarios import query_pairs

pytestmark = [pytest.mark.broker, pytest.mark.slow]

bh.skip_without_tools()

LINES = bh.lines_from_env("DUMP_DLEDGER_LINES", "5.5.1")
WHATS = ("plain", "mixed")
COMMITTED_BACK = 7   # entries the moved-back checkpoint leaves uncommitted
HEADER = 48          # DLedgerEntry.BODY_OFFSET


def _scenarios(line: str) -> list[dict]:
    return [sc for sc in dledger_scenarios(line) if sc["name"].rsplit("-", 1)[-1] in WHATS]


STORES = bh.Stores({line: _scenarios(line) for line in LINES}, "DLedger store(s) to dump")


def _ask(line: str, written: dict[str, dict], work: Path) -> dict[str, dict]:
    """The broker's answers on copies of one line's stores as it wrote them (``written``: :func:`bh.write_lines`'s):
    name -> ``{"scenario", "written", "answers" (queues, queries, commitlog), "back" (commitlog on the moved-back
    checkpoint), "back_store"}``."""
    out: dict[str, dict] = {}
    requests: list[dict] = []
    for name, run in written.items():
        if run["line"] != line:
            continue
        sc, w = run["scenario"], run["written"]
        out[name] = {"scenario": sc, "written": w}
        if not w.get("ok"):
            continue
        src = Path(sc["dir"])
        conf = bh.read_conf(src / "broker.conf")
        whole = bh.broker_store(src, work / f"{name}-broker-copy")
        back = bh.copy_store(src / "store", work / f"{name}-back")
        checkpoint = back / "dledger-n0" / "checkpoint"
        end = int(bh.read_conf(checkpoint)["endIndex"])
        checkpoint.write_text(f"committedIndex={end - COMMITTED_BACK}\nendIndex={end}\n")
        out[name]["back_store"] = back
        requests.append({"store": whole, "config": conf, "queues": True, "commitlog": True,
                         "queries": query_pairs(sc), "name": name, "what": "answers"})
        requests.append({"store": bh.copy_store(back, work / f"{name}-back-broker-copy"), "config": conf,
                         "commitlog": True, "name": name, "what": "back"})
    if requests:
        answers = bh.read_stores(line, [{k: v for k, v in r.items() if k not in ("name", "what")} for r in requests],
                                 work)
        for r, a in zip(requests, answers):
            out[r["name"]][r["what"]] = a
    return out


@pytest.fixture(scope="module")
def stores(request, tmp_path_factory) -> dict[str, dict]:
    """Every line's scenarios, written (beforehand: :data:`STORES`) and asked once (a JVM per line, the lines in
    parallel)."""
    work = tmp_path_factory.mktemp("dump-dledger")
    written = bh.write_lines(request, STORES, work)
    with ThreadPoolExecutor(len(LINES)) as pool:
        futures = [pool.submit(_ask, line, written, work) for line in LINES]
        runs: dict[str, dict] = {}
        for f in futures:
            runs.update(f.result())
    return runs


CASES = [pytest.param(sc["name"], id=sc["name"]) for line in LINES for sc in _scenarios(line)]


def _run(stores: dict[str, dict], name: str) -> dict:
    r = stores[name]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {name}: {r['written'].get('error')}")
    return r


def _dump(files: list[Path], conf: Path, *more: str) -> list[dict]:
    code, out, err = bh.cli(["dump", *map(str, files), "--json", "--config", str(conf), *more])
    assert code == 0, err[-2000:]
    return [json.loads(line) for line in out.splitlines()]


def _per_file(items: list[dict]) -> list[list[dict]]:
    files: list[list[dict]] = []
    for item in items:
        if item["type"] == "file":
            files.append([])
        files[-1].append(item)
    return files


def _keys(r: dict) -> set[str]:
    """The keys the broker indexes a record under: its KEYS split at spaces, and its UNIQ_KEY."""
    props = r["properties"]
    return {k for k in (props.get("KEYS") or "").split(" ") if k} | ({props["UNIQ_KEY"]} if "UNIQ_KEY" in props
                                                                    else set())


@pytest.mark.parametrize("name", CASES)
def test_dump_of_dledger_data_files_matches_the_broker(stores, name):
    r = _run(stores, name)
    src, w = Path(r["scenario"]["dir"]), r["written"]
    data = sorted((src / "store" / "dledger-n0" / "data").iterdir())
    assert len(data) >= 2
    files = _per_file(_dump(data, src / "broker.conf"))
    assert [f[0]["kind"] for f in files] == ["dledger"] * len(data)
    records = [i for f in files for i in f if i["type"] == "record"]
    # the log: entry indexes from its begin to its end index, the last entry ending at the committed position
    assert [x["entry_index"] for x in records] == list(range(w["dledgerBeginIndex"], w["dledgerEndIndex"] + 1))
    committed = next(a for a in r["answers"] if a["kind"] == "commitlog")["maxPhyOffset"]
    assert committed == w["dledgerCommittedPos"]
    assert records[-1]["entry_pos"] + records[-1]["entry_size"] == committed
    for f, path in zip(files, data):
        head = f[0]
        assert head["log"] == "dledger-n0" and head["committed_offset"] == committed
        assert head["committed_index"] == w["dledgerCommittedIndex"] and head["size_ok"]
        recs = [i for i in f if i["type"] == "record"]
        # each record sits right after its entry's header, holding its own offset as PHYSICALOFFSET
        assert all(x["entry_pos"] == int(path.name) + x["entry_position"] == x["offset"] - HEADER
                   == x["physical_offset"] - HEADER and x["entry_ok"] and x["physical_offset_ok"] for x in recs)
        assert all(x["entry_size"] == x["size"] + HEADER and x["body_crc_ok"] for x in recs)
        # entries follow each other; every file but the last ends with a DLedger blank after its last entry
        ends = [x["entry_position"] + x["entry_size"] for x in recs]
        assert [x["entry_position"] for x in recs[1:]] == ends[:-1]
        blanks = [i for i in f if i["type"] == "event" and i["event"] == "blank"]
        if path != data[-1]:
            assert [(b["position"], b["size"]) for b in blanks] == [(ends[-1], head["file_size"] - ends[-1])]
        assert f[-1]["records"] == len(recs) and f[-1]["not_committed"] == 0 and f[-1]["entries_bad"] == 0
    # every message the broker's getMessage returns, from every queue, is a dumped record, and no other
    # dumped record went to a queue
    broker = {(m[3], q["queueId"], m[0], m[1], m[2]) for q in r["answers"] if q["kind"] == "queue"
              for m in q["messages"]}
    ours = {(x["topic"], x["queue_id"], x["queue_offset"], x["offset"], x["size"]) for x in records
            if x["consume_queue"]}
    assert broker and ours == broker
    assert all(x["reput"] == "dispatched" for x in records)
    # every key and unique key the broker's queryMessage answers for
    queries = [a for a in r["answers"] if a["kind"] == "query"]
    assert len(queries) == len(query_pairs(r["scenario"])) > 0
    found = 0
    for a in queries:
        want = bh.expected_lookup(a)
        found += len(want)
        got = sorted(x["offset"] for x in records if x["indexed"] and x["topic"] == a["topic"] and a["key"] in _keys(x))
        assert got == want, (a["topic"], a["key"])
    assert found > 0


@pytest.mark.parametrize("name", CASES)
def test_records_past_the_committed_entry_are_not_committed(stores, name):
    """The checkpoint moved back: the dump's first ``not_committed`` record is the entry where the broker's
    store, loaded on that checkpoint, ends its commitlog."""
    r = _run(stores, name)
    src = Path(r["scenario"]["dir"])
    data = sorted((r["back_store"] / "dledger-n0" / "data").iterdir())
    items = _dump(data, src / "broker.conf")
    broker_end = next(a for a in r["back"] if a["kind"] == "commitlog")["maxPhyOffset"]
    records = [i for i in items if i["type"] == "record"]
    gone = [x for x in records if x["reput"] == "not_committed"]
    assert len(gone) == COMMITTED_BACK and gone == records[-COMMITTED_BACK:]
    assert gone[0]["entry_pos"] == broker_end
    assert all(x["reput"] == "dispatched" and x["entry_pos"] < broker_end for x in records[:-COMMITTED_BACK])
    ends = [i for i in items if i["type"] == "event" and i["event"] == "committed_end"]
    assert ends and ends[0]["offset"] == broker_end
    summaries = [f[-1] for f in _per_file(items)]
    assert sum(s["not_committed"] for s in summaries) == COMMITTED_BACK
    assert sum(s["dispatched"] for s in summaries) == len(records) - COMMITTED_BACK


@pytest.mark.parametrize("name", CASES)
def test_dledger_index_file_points_at_the_entries(stores, name):
    r = _run(stores, name)
    src, w = Path(r["scenario"]["dir"]), r["written"]
    log = src / "store" / "dledger-n0"
    index_files = sorted((log / "index").iterdir())
    items = _dump([*sorted((log / "data").iterdir()), *index_files], src / "broker.conf")
    entries = {x["entry_index"]: x for x in items if x["type"] == "record"}
    files = [f for f in _per_file(items) if f[0]["kind"] == "dledger_index"]
    assert len(files) == len(index_files)
    units = [u for f in files for u in f if u["type"] == "unit"]
    assert [u["index"] for u in units] == [u["slot_index"] for u in units] == list(
        range(w["dledgerBeginIndex"], w["dledgerEndIndex"] + 1))
    assert all(u["valid"] and u["magic"] == 1 for u in units)
    assert [(u["pos"], u["size"], u["term"]) for u in units] == [
        (entries[u["index"]]["entry_pos"], entries[u["index"]]["entry_size"], entries[u["index"]]["entry_term"])
        for u in units]
    # the broker's queues hold the offset of the record behind each queued entry
    broker = {m[1] for q in r["answers"] if q["kind"] == "queue" for m in q["messages"]}
    assert broker <= {u["pos"] + HEADER for u in units}


@pytest.mark.parametrize("name", CASES[:1])
def test_text_form_and_a_data_file_out_of_its_folder(stores, name, tmp_path, capsys):
    """The text form shows each entry's header; a data file copied out of ``dledger-n0/data/`` is still
    recognized by its first entry (its committed position then unknown: every record as the reput reads it)."""
    r = _run(stores, name)
    src = Path(r["scenario"]["dir"])
    first = sorted((src / "store" / "dledger-n0" / "data").iterdir())[0]
    code, out, err = bh.cli(["dump", str(first), "--config", str(src / "broker.conf"), "--count", "2"])
    assert code == 0, err
    assert "== DLedger data file 00000000000000000000 of dledger-n0" in out
    assert out.count("DLedger entry at position") == 2 and "DLedger entry at position 0: index 0," in out
    copy = tmp_path / first.name
    shutil.copyfile(first, copy)
    moved = _dump([copy], src / "broker.conf")
    in_place = _dump([first], src / "broker.conf")
    assert moved[0]["kind"] == "dledger" and moved[0]["committed_offset"] is None and moved[0]["committed_note"]
    assert [x for x in moved if x["type"] == "record"] == [x for x in in_place if x["type"] == "record"]
    for other in ("checkpoint", "currterm"):
        if (src / "store" / "dledger-n0" / other).is_file():
            code, _, err = bh.cli(["dump", str(src / "store" / "dledger-n0" / other)])
            assert code == 2 and "DLedger log dledger-n0/" in err


def _index_units(index_file: Path) -> list[tuple[int, int]]:
    """(pos, size) of each entry, from the broker's own DLedger index file (32-byte units: magic, pos,
    size, index, term), up to its first all-zero unit."""
    data = index_file.read_bytes()
    out = []
    for at in range(0, len(data) - 31, 32):
        unit = data[at:at + 32]
        if not any(unit):
            break
        out.append((int.from_bytes(unit[4:12], "big", signed=True), int.from_bytes(unit[12:16], "big", signed=True)))
    return out


@pytest.mark.parametrize("name", CASES[:1])
def test_damaged_entries_are_shown_and_the_dump_goes_on(stores, name, tmp_path):
    """In a copy of a data file: a record's magic code overwritten (the reput stops there: the dump says so,
    finds the next entry by content and marks the rest ``not_read``), and, in another copy, an entry
    header's ``pos`` (the reput does not read it: the record is dispatched, its entry flagged).  Where the
    entries are comes from the broker's DLedger index file."""
    r = _run(stores, name)
    src = Path(r["scenario"]["dir"])
    log = src / "store" / "dledger-n0"
    first = sorted((log / "data").iterdir())[0]
    size = first.stat().st_size
    entries = [(p, s) for p, s in _index_units(sorted((log / "index").iterdir())[0]) if p + s <= size]
    assert len(entries) > 8
    data = first.read_bytes()
    bad = tmp_path / "magic" / first.name
    bad.parent.mkdir()
    at = entries[5][0] + HEADER + 4
    bad.write_bytes(data[:at] + bytes.fromhex("DEADBEEF") + data[at + 4:])
    items = _dump([bad], src / "broker.conf")
    records = [i for i in items if i["type"] == "record"]
    assert [x["entry_position"] for x in records] == [p for p, _ in entries[:5] + entries[6:]]
    assert [x["reput"] for x in records] == ["dispatched"] * 5 + ["not_read"] * (len(entries) - 6)
    events = [(i["event"], i["position"]) for i in items if i["type"] == "event"]
    assert events[:2] == [("bad_magic", entries[5][0]), ("resync", entries[6][0])]
    assert events[2][0] == "blank" and events[2][1] == entries[-1][0] + entries[-1][1]
    assert items[-1]["reput_stops_at"] == entries[5][0] and items[-1]["not_read_by_reput"] == len(entries) - 6
    moved = tmp_path / "pos" / first.name
    moved.parent.mkdir()
    at = entries[3][0] + 24  # the header's pos (DLedgerEntry.POS_OFFSET)
    moved.write_bytes(data[:at] + (entries[3][0] + 1).to_bytes(8, "big") + data[at + 8:])
    items = _dump([moved], src / "broker.conf")
    records = [i for i in items if i["type"] == "record"]
    assert [x["entry_ok"] for x in records] == [k != 3 for k in range(len(entries))]
    assert records[3]["entry_pos"] == entries[3][0] + 1 and records[3]["reput"] == "dispatched"
    assert items[-1]["entries_bad"] == 1 and items[-1]["dispatched"] == len(entries)
