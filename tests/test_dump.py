"""``python -m pipelines dump`` and store_format.filedump: every kind of store file, decoded read-only.

* Records written by store_format.writer.CommitLogWriter come back field by field.
* The broker-written consume queue and index files of the golden stores decode to units and entries
  that point at the right records of their commitlog, in the numbers the manifests give.
* Corrupt records are shown and the dump goes on (resynchronizing after an unreadable record).
* --from/--count, --json, read-only files, bounded memory, and the CLI itself.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pipelines.cli import main
from store_format import filedump
from store_format.config import BrokerConfig, load_broker_config
from store_format.corruption import flip_body_byte, set_magic_code, set_total_size
from store_format.filedump import open_dump
from store_format.filedump.config_json import parse_broker_json
from store_format.javahash import index_key_hash
from store_format.sample import generate_sample_store
from store_format.store import Reader
from store_format.writer import CommitLogWriter

SEGMENT = 64 * 1024


def _items(path: Path | str, config: BrokerConfig | None = None, **kw) -> list[dict]:
    window = kw.pop("window", filedump.DEFAULT_WINDOW)
    return list(open_dump(str(path), config or BrokerConfig(), window=window).items(**kw))


def _of(items: list[dict], kind: str) -> list[dict]:
    return [i for i in items if i["type"] == kind]


def _events(items: list[dict], name: str) -> list[dict]:
    return [i for i in items if i["type"] == "event" and i["event"] == name]


def _segments(root: Path) -> list[Path]:
    return sorted((root / "commitlog").iterdir())


# ---------------------------------------------------------------------------------------------
# commitlog: a round trip through the writer


MESSAGES = [
    # (topic, queue_id, body, properties, extra writer fields)
    ("TopicA", 0, b"hello", {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1"}, {}),
    ("TopicA", 1, b"", {"TAGS": "TagB"}, {"flag": 7, "reconsume_times": 2}),
    ("TopicB", 3, bytes(range(256)) * 3, {"KEYS": "订单-1  🚀x"}, {"born_host": "[fd00::c1:3f9d]:52369",
                                                                    "store_host": "[fd00::64]:10911"}),
    ("TopicB", 2, b"prepared", {"KEYS": "tx"}, {"sys_flag": 0x4, "prepared_tx_offset": 0}),
    ("TopicC", 0, b"commit", {}, {"sys_flag": 0x8, "prepared_tx_offset": 1234}),
    ("T" * 150, 5, b"v2 record", {"TAGS": "long"}, {"magic_v2": True}),
]


def _write_roundtrip_store(root: Path) -> tuple[BrokerConfig, list[dict], int]:
    """Sixty records (the six kinds above, ten times) over two segments; returns what was written."""
    config = BrokerConfig(mappedFileSizeCommitLog=8 * 1024)
    written: list[dict] = []
    with CommitLogWriter(root, config) as w:
        for rep in range(10):
            for topic, qid, body, props, extra in MESSAGES:
                ts = 1_700_000_000_000 + 1000 * len(written)
                fields = {"store_timestamp": ts, "born_timestamp": ts - 17, **extra}
                offset, size = w.append(topic, qid, body + bytes([rep]), props, **fields)
                written.append({"topic": topic, "queue_id": qid, "body_length": len(body) + 1, "properties": props,
                                "offset": offset, "size": size, "store_timestamp": ts, "born_timestamp": ts - 17,
                                "born_host": extra.get("born_host", "10.0.0.1:50000"),
                                "store_host": extra.get("store_host", "10.0.0.100:10911"),
                                "flag": extra.get("flag", 0), "reconsume_times": extra.get("reconsume_times", 0),
                                "prepared_transaction_offset": extra.get("prepared_tx_offset", 0),
                                "tx": extra.get("sys_flag", 0), "magic": "V2" if extra.get("magic_v2") else "V1",
                                "queue_offset": w.queue_offset(topic, qid) - 1 if extra.get("sys_flag", 0) in (0, 8)
                                else 0})
        end = w.offset
    return config, written, end


def test_commitlog_round_trip(tmp_path: Path) -> None:
    config, written, end = _write_roundtrip_store(tmp_path)
    segs = _segments(tmp_path)
    assert len(segs) >= 2, "the records must roll over into a second segment"
    records, blanks, ends = [], [], []
    for seg in segs:
        items = _items(seg, config)
        header = items[0]
        assert header["type"] == "file" and header["kind"] == "commitlog" and header["base_offset"] == int(seg.name)
        assert items[-1]["type"] == "summary"
        records += _of(items, "record")
        blanks += _events(items, "blank")
        ends += _events(items, "end_of_data")
    assert len(records) == len(written)
    tx_names = {0: "none", 4: "prepared", 8: "commit"}
    for got, want in zip(records, written):
        assert got["offset"] == want["offset"] == got["physical_offset"]
        assert got["physical_offset_ok"] and got["status"] == "ok" and got["body_crc_ok"]
        assert got["size"] == got["structural_size"] == want["size"]
        for k in ("topic", "queue_id", "body_length", "store_timestamp", "born_timestamp", "born_host", "store_host",
                  "flag", "reconsume_times", "prepared_transaction_offset", "magic", "queue_offset"):
            assert got[k] == want[k], (k, got[k], want[k])
        assert got["properties"] == want["properties"]
        assert got["transaction"] == tx_names[want["tx"]]
        assert (got["sys_flag"] & 0xC) == want["tx"]
        assert bool(got["sys_flag"] & 0x10) == want["born_host"].startswith("[")
        assert got["tags"] == want["properties"].get("TAGS")
        assert got["uniq_key"] == want["properties"].get("UNIQ_KEY")
        expected_keys = ([want["properties"]["UNIQ_KEY"]] if "UNIQ_KEY" in want["properties"] else []) + [
            k for k in want["properties"].get("KEYS", "").split(" ") if k]
        assert got["index_keys"] == expected_keys
        assert got["consume_queue"] == (want["tx"] in (0, 8))
        assert got["reput"] == "dispatched"
    # a blank record where the first segment's last record ends; zeros where the data ends
    last_in_first = [w for w in written if w["offset"] < config.mappedFileSizeCommitLog][-1]
    assert [b["offset"] for b in blanks] == [last_in_first["offset"] + last_in_first["size"]]
    assert blanks[0]["size"] == blanks[0]["expected_size"] == config.mappedFileSizeCommitLog - blanks[0]["position"]
    assert [e["offset"] for e in ends] == [end]


def test_small_windows_give_the_same_records(tmp_path: Path) -> None:
    """Windows far smaller than the segment (records straddle every boundary) change nothing."""
    config, written, _ = _write_roundtrip_store(tmp_path)
    seg = _segments(tmp_path)[0]
    whole = _of(_items(seg, config), "record")
    small = _of(_items(seg, config, window=700), "record")
    assert small == whole and len(whole) == sum(1 for w in written if w["offset"] < config.mappedFileSizeCommitLog)


# ---------------------------------------------------------------------------------------------
# corrupt records


def test_corrupt_records_are_shown_and_the_dump_goes_on(tmp_path: Path) -> None:
    """A flipped body byte (CRC fails, the reput still dispatches it), a totalSize 8 too large (the
    reput skips that record and goes on at its structural end), a bad magic code (a master's reput
    skips the rest of the segment: the dump says so, resynchronizes on the next record and marks the
    rest ``not_read``)."""
    config = BrokerConfig(mappedFileSizeCommitLog=SEGMENT)
    with CommitLogWriter(tmp_path, config) as w:
        res = w.write_batch(topic="T", queue_id=0, body=[bytes([i]) * 100 for i in range(60)],
                            properties={"TAGS": "x"}, store_timestamp=1_700_000_000_000)
    offsets, sizes = res.offsets.tolist(), res.sizes.tolist()
    flip_body_byte(tmp_path, offsets[5], index=3)
    set_total_size(tmp_path, offsets[10], delta=8)
    set_magic_code(tmp_path, offsets[20])
    items = _items(_segments(tmp_path)[0], config)
    recs = _of(items, "record")
    assert [r["offset"] for r in recs] == offsets[:20] + offsets[21:]  # every record but the unreadable one
    crc_bad = [r["offset"] for r in recs if not r["body_crc_ok"]]
    assert crc_bad == [offsets[5]]
    assert recs[5]["reput"] == "dispatched" and recs[5]["body_crc_computed"] != recs[5]["body_crc"]
    mismatch = [r for r in recs if r["status"] == "size_mismatch"]
    assert [(r["offset"], r["size"], r["structural_size"]) for r in mismatch] == [(offsets[10], sizes[10] + 8,
                                                                                    sizes[10])]
    assert recs[10]["reput"] == "skipped_size_mismatch" and recs[11]["reput"] == "dispatched"
    bad = _events(items, "bad_magic")
    assert len(bad) == 1 and bad[0]["offset"] == offsets[20] and bad[0]["magic"] == "0xDEADBEEF"
    resync = _events(items, "resync")
    assert [e["offset"] for e in resync] == [offsets[21]]
    assert {r["reput"] for r in recs[20:]} == {"not_read"}
    summary = items[-1]
    assert summary["records"] == 59 and summary["not_read_by_reput"] == 39 and summary["crc_failed"] == 1
    assert summary["dispatched"] == 19 and summary["size_mismatch"] == 1 and summary["reput_stops_at"] == offsets[20]
    assert [e["offset"] for e in _events(items, "end_of_data")] == [offsets[-1] + sizes[-1]]


def test_golden_corrupt_store(golden_dir: Path) -> None:
    """corrupt-4.9.8 (manifest note): file 0 message 10 has a flipped body byte, file 1 message 50 a bad
    magic code, file 3 message 30 a totalSize 8 too large."""
    case = golden_dir / "corrupt-4.9.8"
    config = load_broker_config((case / "broker.conf").read_text())
    segs = sorted((case / "store" / "commitlog").iterdir())
    recs0 = _of(_items(segs[0], config), "record")
    assert [r["no"] for r in recs0 if not r["body_crc_ok"]] == [10]
    items1 = _items(segs[1], config)
    recs1 = _of(items1, "record")
    bad = _events(items1, "bad_magic")
    assert len(bad) == 1 and bad[0]["magic"] == "0xDEADBEEF"
    assert bad[0]["position"] == recs1[49]["position"] + recs1[49]["size"]
    # only the magic code was changed: the next record starts totalSize bytes further
    assert _events(items1, "resync")[0]["position"] == bad[0]["position"] + bad[0]["total_size"]
    assert recs1[50]["position"] == bad[0]["position"] + bad[0]["total_size"]
    assert [r["reput"] for r in recs1[:50]] == ["dispatched"] * 50 and recs1[50]["reput"] == "not_read"
    recs3 = _of(_items(segs[3], config), "record")
    assert [r["no"] for r in recs3 if r["status"] == "size_mismatch"] == [30]
    assert recs3[30]["size"] == recs3[30]["structural_size"] + 8
    assert recs3[31]["position"] == recs3[30]["position"] + recs3[30]["structural_size"]


# ---------------------------------------------------------------------------------------------
# golden consume queue and index files


def _commitlog_records(case: Path, config: BrokerConfig) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for seg in sorted((case / "store" / "commitlog").iterdir()):
        for r in _of(_items(seg, config), "record"):
            out[r["offset"]] = r
    return out


@pytest.mark.parametrize("case_name", ["basic-4.9.8", "lmq-4.9.8", "rebased-4.9.8", "timebase-4.9.8",
                                       pytest.param("basic-5.3.3", marks=pytest.mark.full)])
def test_golden_consume_queue_and_index_files(golden_dir: Path, case_name: str) -> None:
    """The broker's own consume queue and index files decode to units and entries that match the
    records of the commitlog: every unit points at a record of its topic/queue with its size, queue
    offset and tagsCode; every index entry's keyHash is the hash of topic#key for a key of the record it
    points at, and every entry is on exactly one slot chain.  The counts are the manifest's: its files
    and sizes, and for lmq-4.9.8 the oracle's consumeQueueEntries."""
    case = golden_dir / case_name
    manifest = json.loads((case / "manifest.json").read_text())
    config = load_broker_config((case / "broker.conf").read_text())
    records = _commitlog_records(case, config)
    units = 0
    blank_units = 0
    for rel, meta in manifest["consumequeue"].items():
        path = case / "expected" / "consumequeue" / rel
        assert hashlib.sha256(path.read_bytes()).hexdigest() == meta["sha256"]
        items = _items(path, config)
        header = items[0]
        assert header["file_size"] == meta["size"] and header["size_ok"]
        topic, qid = rel.split("/")[0], int(rel.split("/")[1])
        assert (header["topic"], header["queue_id"]) == (topic, qid)
        for u in _of(items, "unit"):
            if u["blank"]:
                blank_units += 1
                continue
            units += 1
            r = records[u["commitlog_offset"]]
            assert u["size"] == r["size"] and u["tags_code"] == r["tags_code"]
            if topic.startswith("%LMQ%"):
                continue
            assert (r["topic"], r["queue_id"], r["queue_offset"]) == (topic, qid, u["queue_offset"])
    dispatched_to_own_queue = sum(1 for r in records.values() if r["consume_queue"])
    if "consumeQueueEntries" in manifest["oracle"]:
        assert units == manifest["oracle"]["consumeQueueEntries"]
    else:
        assert units == dispatched_to_own_queue
    if case_name == "rebased-4.9.8":
        assert blank_units > 0  # fillPreBlank before each queue's first real unit
    # index files
    names = sorted(p.name for p in (case / "expected" / "index").iterdir())
    assert names == [m["name"] for m in manifest["index"]]
    entries = 0
    for meta in manifest["index"]:
        path = case / "expected" / "index" / meta["name"]
        items = _items(path, config)
        header, summary = items[0], items[-1]
        assert header["file_size"] == meta["size"] and header["layout_from"] == "config"
        entry_items = _of(items, "entry")
        assert len(entry_items) == header["entries"] == max(header["index_count"] - 1, 0)
        assert summary["chain_errors"] == 0 and summary["unreachable_entries"] == 0
        assert summary["non_empty_slots"] == len(_of(items, "slot")) == header["hash_slot_count"]
        assert sum(s["chain_length"] for s in _of(items, "slot")) == len(entry_items)
        for e in entry_items:
            r = records[e["commitlog_offset"]]
            hashes = {index_key_hash(f"{r['topic']}#{k}") for k in r["index_keys"]}
            assert e["key_hash"] in hashes
            assert e["slot"] == e["key_hash"] % header["max_hash_slot_num"]
        entries += len(entry_items)
    assert entries == sum(len(r["index_keys"]) for r in records.values() if r["indexed"])


# ---------------------------------------------------------------------------------------------
# checkpoint and config/*.json


def test_checkpoint_and_config_json(tmp_path: Path) -> None:
    cp = tmp_path / "checkpoint"
    cp.write_bytes(struct.pack(">qqqqq", 1_700_000_010_000, 1_700_000_005_000, 1_700_000_001_000, 77, 88)
                   .ljust(4096, b"\0"))
    items = _items(cp)
    fields = _of(items, "checkpoint")[0]
    assert fields["physic_msg_timestamp"] == 1_700_000_010_000
    assert fields["logics_msg_timestamp"] == 1_700_000_005_000
    assert fields["index_msg_timestamp"] == 1_700_000_001_000
    assert (fields["master_flushed_offset"], fields["confirm_phy_offset"]) == (77, 88)
    # StoreCheckpoint.getMinTimestamp: min(physic, logics) - 3000; getMinTimestampIndex: min(that, index)
    assert fields["min_timestamp"] == 1_700_000_002_000
    assert fields["min_timestamp_index"] == 1_700_000_001_000
    conf = tmp_path / "config"
    conf.mkdir()
    # fastjson writes integer map keys without quotes; a string value may contain ",5:" and must survive
    (conf / "consumerOffset.json").write_text(
        '{\n\t"offsetTable":{\n\t\t"TopicA@g1":{0:12,1:3},\n\t\t"TopicB@g2":{3:40}\n\t},'
        '\n\t"note":"a,5:b", "list":[1, 2]\n}')
    items = _items(conf / "consumerOffset.json")
    got = {f["key"]: f["value"] for f in _of(items, "field")}
    assert got == {"offsetTable.TopicA@g1.0": 12, "offsetTable.TopicA@g1.1": 3, "offsetTable.TopicB@g2.3": 40,
                   "note": "a,5:b", "list.0": 1, "list.1": 2}
    assert parse_broker_json('{"a":{-1:2}}') == {"a": {"-1": 2}}


# ---------------------------------------------------------------------------------------------
# the command line


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["dump", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_lines_from_and_count(tmp_path: Path, capsys) -> None:
    config, written, _ = _write_roundtrip_store(tmp_path)
    seg = _segments(tmp_path)[0]
    code, out, _ = _cli(capsys, str(seg), "--json", "--from", "5", "--count", "3")
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "file" and lines[-1]["type"] == "summary"
    recs = [x for x in lines if x["type"] == "record"]
    assert [r["no"] for r in recs] == [5, 6, 7]
    assert [r["offset"] for r in recs] == [w["offset"] for w in written[5:8]]
    assert lines[-1]["items_shown"] == 3
    # two files: one header each; text mode prints a table with one row per record
    cq = tmp_path / "consumequeue" / "TopicA" / "0" / "00000000000000000000"
    cq.parent.mkdir(parents=True)
    cq.write_bytes(struct.pack(">qiq", 0, 0x7FFFFFFF, 0) + struct.pack(">qiq", 4242, 100, -5) + bytes(200))
    code, out, _ = _cli(capsys, str(seg), str(cq), "--json", "--count", "2")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [x["kind"] for x in lines if x["type"] == "file"] == ["commitlog", "consume_queue"]
    units = [x for x in lines if x["type"] == "unit"]
    assert [(u["commitlog_offset"], u["size"], u["tags_code"], u["blank"]) for u in units] == [
        (0, 0x7FFFFFFF, 0, True), (4242, 100, -5, False)]
    code, out, _ = _cli(capsys, str(cq))
    assert code == 0 and "blank (fillPreBlank)" in out
    end = [x for x in _items(cq) if x["type"] == "event"]
    assert [(e["event"], e["unit"]) for e in end] == [("end_of_data", 2)]
    code, out, _ = _cli(capsys, str(seg), "--from", "1", "--count", "2")
    rows = [line for line in out.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert code == 0 and len(rows) == 2 and str(written[1]["offset"]) in rows[0]


def test_cli_errors_exit_2(tmp_path: Path, capsys) -> None:
    code, _, err = _cli(capsys, str(tmp_path / "missing" / "00000000000000000000"))
    assert code == 2 and err.startswith("error:") and "no such file" in err
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    code, _, err = _cli(capsys, str(other))
    assert code == 2 and "not a store file" in err
    odd_index = tmp_path / "20240101000000000"
    odd_index.write_bytes(bytes(150))
    code, _, err = _cli(capsys, str(odd_index))
    assert code == 2 and "--config" in err


def test_cli_reads_read_only_files(tmp_path: Path, capsys, monkeypatch, golden_dir: Path) -> None:
    """Files with mode 0444 in folders with mode 0555 dump fine, nothing is opened for writing and
    nothing changes (root ignores the modes, hence the check on the open flags)."""
    store = tmp_path / "store"
    _write_roundtrip_store(store)
    case = golden_dir / "basic-4.9.8"
    (store / "index").mkdir()
    index_name = sorted((case / "expected" / "index").iterdir())[0]
    (store / "index" / index_name.name).write_bytes(index_name.read_bytes())
    cq = store / "consumequeue" / "BasicTopic0" / "0"
    cq.mkdir(parents=True)
    (cq / "00000000000000000000").write_bytes(
        (case / "expected" / "consumequeue" / "BasicTopic0" / "0" / "00000000000000000000").read_bytes())
    (store / "checkpoint").write_bytes(bytes(4096))
    (store / "config").mkdir()
    (store / "config" / "delayOffset.json").write_text('{"offsetTable":{1:5}}')
    files = [p for p in store.rglob("*") if p.is_file()]
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    for p in files:
        p.chmod(0o444)
    dirs = sorted((p for p in store.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) + [store]
    for d in dirs:
        d.chmod(0o555)
    opened: list[int] = []
    real_open = os.open

    def spy(path, flags, *a, **k):
        opened.append(flags)
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", spy)
    try:
        code, out, err = _cli(capsys, *map(str, files), "--json", "--config",
                              str(case / "broker.conf"))
    finally:
        monkeypatch.undo()
        for d in dirs:
            d.chmod(0o755)
    assert code == 0, err
    kinds = [json.loads(line)["kind"] for line in out.splitlines() if json.loads(line)["type"] == "file"]
    assert sorted(kinds) == sorted(["commitlog"] * 2 + ["index", "consume_queue", "checkpoint", "config"])
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    assert opened and not [f for f in opened if f & write_flags]
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files} == before
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o444 for p in files)


# ---------------------------------------------------------------------------------------------
# bounded memory


def _peak_while_dumping(path: Path, config: BrokerConfig, window: int) -> tuple[int, int, int, int]:
    """(tracemalloc peak, largest single read, bytes read, records) while streaming a segment's dump."""
    reads: list[int] = []
    real_call, real_into = Reader.__call__, Reader.read_into

    def call(self, pos, length):
        reads.append(length)
        return real_call(self, pos, length)

    def into(self, pos, out):
        reads.append(len(out))
        return real_into(self, pos, out)

    Reader.__call__, Reader.read_into = call, into  # type: ignore[method-assign]
    try:
        list(_items(path, config, window=window, count=1))  # warm up (JIT, imports) outside the measurement
        reads.clear()
        tracemalloc.start()
        n = 0
        for item in open_dump(str(path), config, window=window).items():
            n += item["type"] == "record"
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        Reader.__call__, Reader.read_into = real_call, real_into  # type: ignore[method-assign]
    return peak, max(reads), sum(reads), n


def test_memory_is_bounded_by_the_window_not_the_segment(tmp_path: Path) -> None:
    """A segment with six times the data costs no more memory: the dump reads and decodes one window
    (plus a 1 MiB margin for the record straddling its end) at a time.  (The walk's fixed output arrays,
    about 10 MB, are the same for both.)"""
    config = BrokerConfig(mappedFileSizeCommitLog=8 << 20)
    small = generate_sample_store(str(tmp_path / "small"), config, messages=1_500, body_size=512, seed=1)
    big = generate_sample_store(str(tmp_path / "big"), config, messages=10_000, body_size=512, seed=1)
    assert big["bytes"] > 6 * (1 << 20) and big["segments"] == small["segments"] == 1
    window = 256 << 10
    peak_small, read_small, _, n_small = _peak_while_dumping(_segments(tmp_path / "small")[0], config, window)
    peak_big, read_big, total_big, n_big = _peak_while_dumping(_segments(tmp_path / "big")[0], config, window)
    assert (n_small, n_big) == (1_500, 10_000)
    # the data went through reads of at most two windows (no map of the whole file)
    assert total_big >= big["bytes"] and max(read_small, read_big) <= 2 * (window + (1 << 20))
    assert peak_big < peak_small + (1 << 20), (peak_small, peak_big)
    # the measurement sees a whole segment in memory: one window over all of it costs that much more
    peak_whole, _, _, _ = _peak_while_dumping(_segments(tmp_path / "big")[0], config, 8 << 20)
    assert peak_whole > peak_big + big["bytes"] / 2, (peak_big, peak_whole)


def test_records_of_a_sample_store_match_its_counts(tmp_path: Path) -> None:
    config = BrokerConfig(mappedFileSizeCommitLog=1 << 20)
    info = generate_sample_store(str(tmp_path), config, messages=3_000, seed=4)
    total = 0
    for seg in _segments(tmp_path):
        items = _items(seg, config, window=100_000)
        total += len(_of(items, "record"))
        assert items[-1]["crc_failed"] == 0 and items[-1]["size_mismatch"] == 0
    assert total == info["messages"]
    np.testing.assert_equal(total, 3_000)
