"""Lookups by key, client msgId and offset msgId: from the Delta tables and from a store's index
files, exactly the expected messages (the colliding keys ``Aa``/``BB`` included), and the fraction of
files a key lookup reads."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import tables_store as ts

from pipelines.cli import main as cli_main
from pipelines.commands.lookup import demo_lookup
from pipelines.lookup import (
    lookup_index,
    lookup_key,
    lookup_msg_id,
    lookup_offset_msg_id,
    read_records,
    render,
)
from store_format.indexfile import select_phy_offsets
from store_format.reput import rebuild_in_memory
from store_format.store import open_store

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def main(spark, tmp_path_factory) -> dict:
    return ts.main_tables(spark, tmp_path_factory.getbasetemp() / "tables-main")


@pytest.fixture(scope="module")
def index_dir(main, tmp_path_factory) -> Path:
    """The store's index/ folder as the broker's reput writes it."""
    out = tmp_path_factory.mktemp("index")
    for name, data in rebuild_in_memory(open_store(str(main["store"]), main["config"]), main["config"]).index:
        (out / name).write_bytes(data)
    return out


def _indexed_with(main: dict, topic: str, key: str) -> list[int]:
    """Offsets of the indexed messages of ``topic`` carrying ``key`` (a KEYS token or the UNIQ_KEY)."""
    return sorted(m["commitlog_offset"] for m in main["messages"]
                  if m["topic"] == topic and m["sys_flag"] & 0xC != 12
                  and (key in m["properties"]["KEYS"].split(" ") or key == m["properties"]["UNIQ_KEY"]))


def _offsets(res) -> list[int]:
    return [r["commitlog_offset"] for r in res.rows]


def _by_number(main: dict, i: int) -> dict:
    return next(m for m in main["messages"] if m["properties"]["UNIQ_KEY"] == ts.message(i)["properties"]["UNIQ_KEY"])


def test_key_lookup_finds_exactly_the_messages_with_the_key(main) -> None:
    tables = str(main["tables"])
    for topic, key in [("TopicA", "shared3"), ("TopicB", "shared5"), ("TopicA", "k100"), ("TopicB", "订单-17"),
                       ("TopicB", "🚀17"), ("TopicA", "k61"), ("TopicA", "nothing-has-this")]:
        assert _offsets(lookup_key(tables, topic, key)) == _indexed_with(main, topic, key), (topic, key)
    # a rolled-back message's keys never reach the index
    rolled = _by_number(main, 13)
    assert rolled["sys_flag"] == 12 and not lookup_key(tables, rolled["topic"], "k13").rows


def test_colliding_keys_are_told_apart(main) -> None:
    tables = str(main["tables"])
    aa_a = [_by_number(main, 7)["commitlog_offset"], _by_number(main, 20)["commitlog_offset"]]
    bb_a = [_by_number(main, 8)["commitlog_offset"]]
    aa_b = [_by_number(main, 9)["commitlog_offset"]]
    assert _offsets(lookup_key(tables, "TopicA", "Aa")) == sorted(aa_a)
    assert _offsets(lookup_key(tables, "TopicA", "BB")) == bb_a
    assert _offsets(lookup_key(tables, "TopicB", "Aa")) == aa_b
    assert not lookup_key(tables, "TopicB", "BB").rows


def test_index_lookup_drops_the_brokers_hash_collisions(main, index_dir: Path) -> None:
    cfg = main["config"]
    aa_a = sorted([_by_number(main, 7)["commitlog_offset"], _by_number(main, 20)["commitlog_offset"]])
    bb_a = _by_number(main, 8)["commitlog_offset"]
    # the broker's own walk returns the BB message for Aa: equal hashes
    broker = sorted(o for p in sorted(index_dir.iterdir())
                    for o in select_phy_offsets(p.read_bytes(), "TopicA#Aa", max_hash_slot_num=cfg.maxHashSlotNum))
    assert broker == sorted(aa_a + [bb_a])
    res = lookup_index(str(index_dir), str(main["store"]), cfg, "TopicA", "Aa")
    assert _offsets(res) == aa_a and res.discarded == [bb_a]
    assert "dropped" in render(res)
    res = lookup_index(str(index_dir), str(main["store"]), cfg, "TopicA", "BB", body=True)
    assert _offsets(res) == [bb_a] and res.rows[0]["body"] == ts.message(8)["body"]
    assert res.discarded == aa_a
    for topic, key in [("TopicA", "shared3"), ("TopicB", "k101")]:
        res = lookup_index(str(index_dir), str(main["store"]), cfg, topic, key, max_num=1000)
        assert _offsets(res) == _indexed_with(main, topic, key)
    # the broker's cap: at most 64 offsets per query
    assert len(lookup_index(str(index_dir), str(main["store"]), cfg, "TopicA", "shared3").rows) <= 64


def test_msg_id_and_offset_msg_id(main) -> None:
    tables = str(main["tables"])
    m = _by_number(main, 100)
    uniq = m["properties"]["UNIQ_KEY"]
    assert _offsets(lookup_msg_id(tables, uniq)) == [m["commitlog_offset"]]
    assert _offsets(lookup_msg_id(tables, uniq, topic=m["topic"])) == [m["commitlog_offset"]]
    assert not lookup_msg_id(tables, uniq, topic="TopicB" if m["topic"] == "TopicA" else "TopicA").rows
    delayed = _by_number(main, 64)  # SCHEDULE_TOPIC_XXXX, found without naming the topic
    assert delayed["topic"] == ts.SCHEDULE_TOPIC
    assert _offsets(lookup_msg_id(tables, delayed["properties"]["UNIQ_KEY"])) == [delayed["commitlog_offset"]]
    for i in (100, 66):  # IPv4 and IPv6 store hosts
        m = _by_number(main, i)
        res = lookup_offset_msg_id(tables, ts.create_offset_msg_id(m["store_host"], m["commitlog_offset"]),
                                   body=True)
        assert _offsets(res) == [m["commitlog_offset"]] and res.rows[0]["body"] == m["body"]
        assert res.files_read["messages"] == 1
    # a well-formed id of another store host names no message here
    other = ts.create_offset_msg_id("10.9.9.9:10911", _by_number(main, 100)["commitlog_offset"])
    assert not lookup_offset_msg_id(tables, other).rows


def test_time_range_and_bodies(main) -> None:
    tables = str(main["tables"])
    everything = _indexed_with(main, "TopicA", "shared3")
    lo, hi = ts.T0 + 100_000, ts.T0 + 300_000
    res = lookup_key(tables, "TopicA", "shared3", begin_ms=lo, end_ms=hi)
    expected = [m["commitlog_offset"] for m in main["messages"] if m["commitlog_offset"] in set(everything)
                and lo <= m["store_timestamp"] <= hi]
    assert _offsets(res) == sorted(expected) and 0 < len(expected) < len(everything)
    # bodies: from the table, and straight from the commitlog
    res = lookup_key(tables, "TopicA", "k100", body=True)
    assert res.rows[0]["body"] == ts.message(100)["body"]
    recs = read_records(open_store(str(main["store"]), main["config"]), main["config"],
                        [_by_number(main, 100)["commitlog_offset"]], with_body=True)
    assert recs[0]["body"] == ts.message(100)["body"] and recs[0]["keys"] == ["k100", "shared2"]


def test_a_key_lookup_reads_a_small_fraction_of_the_files(main, capsys) -> None:
    tables = str(main["tables"])
    res = lookup_key(tables, "TopicA", "shared3")
    read, total = res.files_read["message_keys"], res.files_total["message_keys"]
    n_segments = len(list((main["store"] / "commitlog").iterdir()))
    assert read <= n_segments < total  # one key bucket per segment at most
    assert res.files_read["messages"] <= res.files_total["messages"]
    with capsys.disabled():
        print(f"\n[lookup TopicA#shared3] message_keys: read {read} of {total} files; "
              f"messages: read {res.files_read['messages']} of {res.files_total['messages']} files")


def test_lookup_command(main, index_dir: Path, capsys) -> None:
    tables = str(main["tables"])
    assert cli_main(["lookup", "--tables", tables, "--topic", "TopicA", "--key", "Aa", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["commitlog_offset"] for m in out["messages"]] == sorted(
        [_by_number(main, 7)["commitlog_offset"], _by_number(main, 20)["commitlog_offset"]])
    m = _by_number(main, 100)
    assert cli_main(["lookup", "--tables", tables, "--msg-id", m["properties"]["UNIQ_KEY"], "--body"]) == 0
    text = capsys.readouterr().out
    assert "1 message(s)" in text and "body-100-" in text and "read" in text
    assert cli_main(["lookup", "--tables", tables, "--offset-msg-id",
                     ts.create_offset_msg_id(m["store_host"], m["commitlog_offset"])]) == 0
    assert str(m["commitlog_offset"]) in capsys.readouterr().out
    conf = main["store"] / "broker.conf"
    conf.write_text(ts.CONFIG_TEXT)
    assert cli_main(["lookup", "--index", str(index_dir), "--store", str(main["store"]), "--config", str(conf),
                     "--topic", "TopicA", "--key", "BB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["commitlog_offset"] for r in out["messages"]] == [_by_number(main, 8)["commitlog_offset"]]
    assert len(out["discarded"]) == 2
    assert cli_main(["lookup", "--tables", tables]) == 2  # nothing to look for: an error, not a traceback
    demo_lookup(tables)
    assert "example lookup" in capsys.readouterr().out


def test_index_lookup_reads_the_stores_broker_conf_without_config(main, index_dir: Path, capsys) -> None:
    """``lookup --index`` without ``--config``: STORE/broker.conf (its 64 hash slots, 32 KiB segments);
    without that file the broker's defaults (5,000,000 slots) do not match these index files' size, which
    is one line and exit 2 (it once read past the end of the mapped file)."""
    conf = main["store"] / "broker.conf"
    conf.write_text(ts.CONFIG_TEXT)
    args = ["lookup", "--index", str(index_dir), "--store", str(main["store"]), "--topic", "TopicA", "--key", "BB",
            "--json"]
    try:
        assert cli_main(args) == 0
        out = json.loads(capsys.readouterr().out)
        assert [r["commitlog_offset"] for r in out["messages"]] == [_by_number(main, 8)["commitlog_offset"]]
        conf.unlink()
        assert cli_main(args) == 2   # the defaults' 5,000,000 slots do not fit these files: one line, no crash
        err = capsys.readouterr().err
        assert "maxHashSlotNum=5000000" in err and "--config" in err and len(err.strip().splitlines()) == 1
    finally:
        conf.write_text(ts.CONFIG_TEXT)
