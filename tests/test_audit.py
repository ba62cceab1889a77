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
