"""The expiry audit on a hand-computed store: known segment mtimes, a fixed as-of time, and a
consumerOffset.json with lag.

Layout (every record 200 bytes, segments of 4096 bytes: 20 records each, then an 8..96-byte blank):
75 messages of topic T alternating queues 0/1, so each segment holds queue offsets 10k..10k+9 of
both queues; consume queue files of 5 units (100 bytes); 2 index keys per message and 40 entries per
index file, so index file k ends with the last record of segment k.

As of 2024-03-10T02:00Z with fileReservedTime=48 and deleteWhen=04, segments modified 5 days, 3 days,
1 day and 1 hour before: the cleanup at 04:00 takes segments 0 and 1 (the minimum offset becomes
8192), with them consume queue files 0-3 of each queue and index files 0 and 1; segment 2 follows the
next day at 04:00; segment 3 is the last and stays.  Group g1 committed offsets 15 (queue 0) and 5
(queue 1): it loses queue offsets 15-19 and 5-19, 5 + 15 messages of 200 bytes; g2 (30, 20) loses none.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest
import tables_store as ts

from pipelines.audit import render, run_audit
from pipelines.cli import main as cli_main
from pipelines.delta import read_arrow
from pipelines.tables import run_tables
from store_format.config import load_broker_config
from store_format.writer import CommitLogWriter

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CONF = ("mappedFileSizeCommitLog=4096\nmappedFileSizeConsumeQueue=100\nmaxHashSlotNum=16\nmaxIndexNum=41\n"
        "fileReservedTime=48\ndeleteWhen=04\n")
H = 3_600_000
DAY = 24 * H
AS_OF = "2024-03-10T02:00:00Z"


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


AS_OF_MS = _ms(AS_OF)
MTIMES = [AS_OF_MS - 5 * DAY, AS_OF_MS - 3 * DAY, AS_OF_MS - DAY, AS_OF_MS - H]
CONSUMER_OFFSETS = """{
\t"offsetTable":{
\t\t"%RETRY%g1@g1":{0:0
\t\t},
\t\t"T@g1":{0:15,1:5
\t\t},
\t\t"T@g2":{0:30,1:20
\t\t}
\t}
}"""


@pytest.fixture(scope="module")
def audited(spark, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("audit")
    store, tables = root / "store", str(root / "tables")
    cfg = load_broker_config(CONF)
    n = 75
    seg = np.arange(n) // 20
    store_ts = np.array(MTIMES)[seg] - 20_000 + (np.arange(n) % 20) * 1000
    with CommitLogWriter(store, cfg) as w:
        res = w.write_batch(topic="T", queue_id=np.arange(n) % 2, body=b"b" * 83,
                            properties=[{"UNIQ_KEY": f"U{i:04d}", "KEYS": f"k{i:04d}"} for i in range(n)],
                            store_timestamp=store_ts)
    assert set(res.sizes.tolist()) == {200} and (res.offsets // 4096).tolist() == seg.tolist()
    ts.set_mtimes(store, MTIMES)
    (store / "config").mkdir()
    (store / "config" / "consumerOffset.json").write_text(CONSUMER_OFFSETS)
    summary = run_tables(str(store), tables, cfg, spark=spark)
    return {"store": store, "tables": tables, "config": cfg, "summary": summary}


def test_audit_as_of_a_fixed_time(audited) -> None:
    rows, summary = run_audit(audited["tables"], AS_OF_MS)
    four, next_day = _ms("2024-03-10T04:00:00Z"), _ms("2024-03-11T04:00:00Z")
    assert summary["next_cleanup"] == {"from": "2024-03-10T04:00:00.000Z", "until": "2024-03-10T05:00:00.000Z"}
    assert [s["segment"] for s in summary["segments"]] == [f"{0:020d}", f"{4096:020d}"]
    assert all(s["time_source"] == "mtime" for s in summary["segments"])
    by_kind: dict[str, list[dict]] = {}
    for r in rows.to_pylist():
        by_kind.setdefault(r["kind"], []).append(r)
    segs = by_kind["segment"]
    assert [_ms_or_none(s["deleted_at"]) for s in segs] == [four, four, next_day, None]
    assert [s["at_next_cleanup"] for s in segs] == [True, True, False, False]
    assert [_ms_or_none(s["reference_time"]) for s in segs] == MTIMES
    assert [_ms_or_none(s["expires_at"]) for s in segs] == [m + 48 * H for m in MTIMES]
    assert segs[-1]["is_last"] and segs[-1]["reason"] == "last segment: never deleted"
    # consume queue files: 0-3 of each queue now, 4-5 the next day, 6 and the last one (7) stay
    for qid in (0, 1):
        files = sorted((r for r in by_kind["consume_queue_file"] if r["queue_id"] == qid), key=lambda r: r["name"])
        assert [r["name"] for r in files] == [f"T/{qid}/{k * 100:020d}" for k in range(8)]
        assert [_ms_or_none(r["deleted_at"]) for r in files] == [four] * 4 + [next_day] * 2 + [None, None]
        assert [r["is_last"] for r in files] == [False] * 7 + [True]
    assert summary["consume_queue_files"] == 8
    # index files: each ends with the last record of its segment
    idx = sorted(by_kind["index_file"], key=lambda r: r["name"])
    assert [r["messages"] for r in idx] == [40, 40, 40, 30]
    assert [r["max_offset"] for r in idx] == [19 * 200, 4096 + 19 * 200, 8192 + 19 * 200, 12288 + 14 * 200]
    assert [_ms_or_none(r["deleted_at"]) for r in idx] == [four, four, next_day, None]
    assert summary["index_files"] == 2
    # what consumers lose
    lost = sorted((r["consumer_group"], r["queue_id"], r["messages"], r["bytes"]) for r in by_kind["unconsumed"])
    assert lost == [("g1", 0, 5, 1000), ("g1", 1, 15, 3000)]
    assert summary["total_lost_messages"] == 20 and summary["total_lost_bytes"] == 4000
    text = render(summary)
    assert "2024-03-10T04:00:00.000Z" in text and "g1" in text and "20 messages, 4,000 bytes" in text


def _ms_or_none(t) -> int | None:
    return None if t is None else int(round(t.timestamp() * 1000))


def test_audit_with_a_full_disk_and_copied_files(audited) -> None:
    # above 85%: everything but the last segment goes at once, expired or not (three at one round)
    rows, summary = run_audit(audited["tables"], AS_OF_MS, disk_used_ratio=0.9)
    assert summary["next_cleanup"]["from"] == "2024-03-10T02:00:00.000Z"
    assert [s["segment"] for s in summary["segments"]] == [f"{k * 4096:020d}" for k in range(3)]
    lost = sorted((r["consumer_group"], r["queue_id"], r["messages"]) for r in rows.to_pylist()
                  if r["kind"] == "unconsumed")
    assert lost == [("g1", 0, 15), ("g1", 1, 25), ("g2", 1, 10)]
    # store times instead of mtimes: the segments' last records are 1 s before their mtimes (6 s for the
    # last segment, which holds 15 records)
    rows, summary = run_audit(audited["tables"], AS_OF_MS, time_source="last_store_time")
    assert [s["time_source"] for s in summary["segments"]] == ["last_store_time"] * 2
    segs = rows.filter(pc.equal(rows["kind"], "segment")).to_pylist()
    assert [_ms_or_none(s["reference_time"]) for s in segs] == [m - 1000 for m in MTIMES[:3]] + [MTIMES[3] - 6000]


def test_audit_command_and_the_published_audit(audited, capsys) -> None:
    published = read_arrow(audited["tables"], "expiry_audit")
    kinds = set(published["kind"].to_pylist())
    assert {"segment", "consume_queue_file", "index_file"} <= kinds
    # as of the run (years after the mtimes): everything but the last segment is due
    segs = published.filter(pc.equal(published["kind"], "segment")).to_pylist()
    assert [s["deleted_at"] is not None for s in segs] == [True, True, True, False]
    assert cli_main(["audit", "--tables", audited["tables"], "--as-of", AS_OF, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total_lost_messages"] == 20 and len(out["segments"]) == 2
    offsets = Path(audited["store"]) / "other-offsets.json"
    offsets.write_text('{"offsetTable":{"T@g3":{0:0,1:0}}}')
    assert cli_main(["audit", "--tables", audited["tables"], "--as-of", AS_OF, "--consumer-offsets", str(offsets),
                     "--write"]) == 0
    text = capsys.readouterr().out
    assert "g3" in text and "40 messages, 8,000 bytes" in text
    written = read_arrow(audited["tables"], "expiry_audit")
    assert {r.timestamp() for r in written["as_of"].to_pylist()} == {AS_OF_MS / 1000}
    assert written.filter(pc.equal(written["kind"], "consume_queue_file")).num_rows == 16


def _audit_text(audited, capsys, *extra: str) -> str:
    assert cli_main(["audit", "--tables", audited["tables"], "--as-of", AS_OF, *extra]) == 0
    return capsys.readouterr().out


def test_audit_text_gives_the_rules_and_a_reason_per_segment(audited, capsys) -> None:
    text = _audit_text(audited, capsys)
    assert "time source      file modification times (auto: every segment's mtime fits its records)" in text
    seg_lines = [line for line in text.splitlines() if line.startswith("  0000")]
    assert len(seg_lines) == 2 and all("expired (fileReservedTime=48 h); deleteWhen=04" in x for x in seg_lines)
    assert "WARNING" not in text
    text = _audit_text(audited, capsys, "--time-source", "last_store_time")
    assert "time source      store time of each segment's last record, as asked" in text


def test_audit_text_above_the_write_reject_ratio(audited, capsys) -> None:
    # 96 % (above 90 %: writes refused; above 85 %: forced): segments 0 and 1 expired, 2 is a day old
    # (48 h reserved): forced; 3 is the last
    text = _audit_text(audited, capsys, "--disk-used", "96")
    assert "WARNING          disk 96 % is above the write-reject ratio 90 % (diskSpaceWarningLevelRatio)" in text
    assert "refuses new messages" in text
    seg_lines = [line for line in text.splitlines() if line.startswith("  0000")]
    assert [x.split()[0] for x in seg_lines] == [f"{k * 4096:020d}" for k in range(3)]
    assert "disk 96 % above 75 % (diskMaxUsedSpaceRatio)" in seg_lines[0]
    assert "forced: disk 96 % above the clean-forcibly ratio 85 %" in seg_lines[2]
    assert "disk size not given (--disk-size)" in text
    # a 100,000-byte disk: the three 4096-byte segments free 12,288 bytes: 83,712 used, read as 84 %
    text = _audit_text(audited, capsys, "--disk-used", "96", "--disk-size", "100000", "--json")
    out = json.loads(text)
    assert out["disk"]["after_next_cleanup_percent"] == 84 and out["disk"]["writes_refused_after"] is False
    assert [(r["segments"], r["forced"], r["disk_before_percent"], r["disk_after_percent"])
            for r in out["rounds"]] == [(3, True, 96, 84)]


def test_audit_with_clean_file_forcibly_disabled(audited, capsys, tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF + "cleanFileForciblyEnable=false\n")
    out = json.loads(_audit_text(audited, capsys, "--disk-used", "96", "--config", str(conf), "--json"))
    # the disk makes a round due now (02:00, not 04:00), but only the two expired segments go
    assert [s["segment"] for s in out["segments"]] == [f"{0:020d}", f"{4096:020d}"]
    assert out["next_cleanup"]["from"] == "2024-03-10T02:00:00.000Z"
    assert {s["reason_kind"] for s in out["segments"]} == {"expired"}
    assert any("cleanFileForciblyEnable=false" in n for n in out["notes"])


def test_audit_tells_unknown_offsets_from_nothing_lost(audited, capsys, tmp_path) -> None:
    bare = tmp_path / "bare-store"
    bare.mkdir()
    text = _audit_text(audited, capsys, "--store", str(bare))
    assert "unconsumed messages lost: unknown: no consumer offsets known (no consumerOffset.json at" in text
    one_queue = tmp_path / "one-queue.json"
    one_queue.write_text('{"offsetTable":{"T@g1":{0:100}}}')
    text = _audit_text(audited, capsys, "--consumer-offsets", str(one_queue))
    line = next(x for x in text.splitlines() if x.startswith("no consumer offsets known for"))
    assert line.startswith("no consumer offsets known for 1 queue(s) with messages in the segments that go")
    assert line.endswith(": T/1")
    assert "0 messages, 0 bytes (of the queues with known offsets)" in text
    consumed = tmp_path / "consumed.json"
    consumed.write_text('{"offsetTable":{"T@g2":{0:30,1:20}}}')
    text = _audit_text(audited, capsys, "--consumer-offsets", str(consumed))
    assert "unconsumed messages lost: none (every consumer group with offsets for these queues has consumed" in text


def test_audit_options_a_user_can_get_wrong(audited, capsys) -> None:
    for extra in (["--disk-used", "120"], ["-D", "rocketmq.broker.other=1"], ["--disk-size", "0"],
                  ["-D", "rocketmq.broker.diskSpaceWarningLevelRatio=high"]):
        assert cli_main(["audit", "--tables", audited["tables"], "--as-of", AS_OF, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and len(err.strip().splitlines()) == 1


def test_audit_manual_delete_and_ratio_properties(audited, capsys, tmp_path) -> None:
    # executeDeleteFilesManually: the rounds from 02:00 run whatever the hour; the two expired segments go
    # at once (manual), the third (a day old, 48 h reserved) stays
    out = json.loads(_audit_text(audited, capsys, "--manual-delete", "--json"))
    assert out["next_cleanup"]["from"] == "2024-03-10T02:00:00.000Z"
    assert [(s["segment"], s["reason_kind"]) for s in out["segments"]] == [(f"{0:020d}", "manual"),
                                                                            (f"{4096:020d}", "manual")]
    # 5.x: -D rocketmq.broker.diskSpaceCleanForciblyRatio=0.5 wins over diskSpaceCleanForciblyRatio (85):
    # a 60 % disk forces every segment but the last out now; without it 60 % is below every threshold
    five, four = tmp_path / "five.conf", tmp_path / "four.conf"
    five.write_text(CONF + "brokerVersion=5\n")
    four.write_text(CONF + "brokerVersion=4\n")
    prop = "rocketmq.broker.diskSpaceCleanForciblyRatio=0.5"
    out = json.loads(_audit_text(audited, capsys, "--config", str(five), "--disk-used", "60", "--json"))
    assert out["next_cleanup"]["from"] == "2024-03-10T04:00:00.000Z" and out["disk"]["clean_forcibly_percent"] == 85
    out = json.loads(_audit_text(audited, capsys, "--config", str(five), "--disk-used", "60", "-D", prop, "--json"))
    assert out["broker_line"] == "5.x" and out["disk"]["clean_forcibly_percent"] == 50
    assert out["next_cleanup"]["from"] == "2024-03-10T02:00:00.000Z"
    assert [s["reason_kind"] for s in out["segments"]] == ["expired", "expired", "forced"]
    # 4.9 isSpaceToDelete sets cleanImmediately but is due only above diskMaxUsedSpaceRatio (75): the
    # forced round waits for deleteWhen (04:00)
    out = json.loads(_audit_text(audited, capsys, "--config", str(four), "--disk-used", "60", "-D", prop, "--json"))
    assert out["broker_line"] == "4.9" and out["next_cleanup"]["from"] == "2024-03-10T04:00:00.000Z"
    assert [s["reason_kind"] for s in out["segments"]] == ["expired", "expired", "forced"]
