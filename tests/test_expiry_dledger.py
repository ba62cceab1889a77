"""``store_format.expiry_dledger`` on hand-made file facts: DLedger's reserved hours, its float ratios,
the old commitlog first, forced passes of at most 10 files.  (The same rule against the published
DLedger code: ``test_dledger_cleanup_broker.py``.)"""
from __future__ import annotations

import datetime as dt

import numpy as np

from store_format.config import BrokerConfig
from store_format.expiry import SegmentFacts, check_space, disk_thresholds, plan_cleanup
from store_format.expiry_dledger import (
    DLEDGER_BATCH_MAX,
    describe_dledger_rule,
    dledger_reserved_ms,
    dledger_space,
    dledger_thresholds,
    plan_dledger_cleanup,
)
from store_format.timeutil import datetime_to_ms

H = 3_600_000
SIZE = 1 << 20
# 2024-03-10T04:30Z: in the deleteWhen hour (04, UTC)
AT_FOUR = datetime_to_ms(dt.datetime(2024, 3, 10, 4, 30, tzinfo=dt.timezone.utc))
AT_TEN = AT_FOUR + 6 * H


def _files(ages: list[float], now: int, first: int = 0) -> list[SegmentFacts]:
    return [SegmentFacts(f"{first + i * SIZE:020d}", first + i * SIZE, SIZE, now - round(a * H), None, None)
            for i, a in enumerate(ages)]


def test_reserved_hours_are_file_reserved_time_plus_one() -> None:
    """fileReservedTime=48: DLedger keeps data files 49 h, so one 48.5 h old stays where the broker's
    commitlog rule would delete it; 0 or less is raised to one hour (CleanSpaceService.doWork)."""
    cfg = BrokerConfig(fileReservedTime=48, deleteWhen="04")
    data = _files([100, 80, 48.5, 1], AT_FOUR)
    plan = plan_dledger_cleanup([], data, cfg, AT_FOUR, time_source="mtime")
    assert plan.at_next_cleanup().tolist() == [True, True, False, False]
    assert plan.deleted_at[:2].tolist() == [AT_FOUR, AT_FOUR]
    assert plan_cleanup(data, cfg, AT_FOUR, time_source="mtime").at_next_cleanup().sum() == 3
    assert plan.reason_kind[-1] == "last" and "49 h" in plan.reason[0]
    assert dledger_reserved_ms(0) == H and dledger_reserved_ms(-3) == H
    # the 48.5 h one expires at 05:00, past the hour: it goes at 04:00 the next day
    assert plan.deleted_at[2] == AT_FOUR - H // 2 + 24 * H


def test_dledger_ratios_are_floats() -> None:
    """diskSpaceRatioToCheckExpired is diskMaxUsedSpaceRatio / 100f: 70 gives 0.699999988, so a disk
    at exactly 70 % counts as above it for DLedger but not for the broker's check; the force-clean
    ratio is at least 0.50, the disk-full ratio force + 0.05, at most 0.95."""
    cfg = BrokerConfig(diskMaxUsedSpaceRatio=70)
    th = dledger_thresholds(cfg)
    assert th.max_used == float(np.float32(0.7)) < 0.7
    assert dledger_space(0.70, th).round_due
    assert not check_space(0.70, disk_thresholds(cfg, "5"), "5").round_due
    assert dledger_thresholds(cfg, {"dledger.disk.ratio.clean": "0.3"}).clean_forcibly == 0.5
    assert dledger_thresholds(cfg, {"dledger.disk.ratio.clean": "0.93"}).warning == float(np.float32(0.95))
    assert th.warning == float(np.float32(0.85) + np.float32(0.05))
    assert dledger_space(-1.0, th) == dledger_space(0.0, th)   # "could not measure" triggers nothing
    assert "diskMaxUsedSpaceRatio=70" in describe_dledger_rule(cfg, th, "5")


def test_old_commitlog_first_then_dledger() -> None:
    """A converted store on 4.9: the broker's rounds delete the old files (the last one alone, a round
    later), DLedger's files wait meanwhile (10 years), and DLedger's pass follows the next round.  On
    5.x the rounds never reach DLedgerCommitLog: the last old file stays, and DLedger's files with it."""
    cfg = BrokerConfig(fileReservedTime=48, deleteWhen="04", brokerVersion="4")
    old = _files([100, 90], AT_FOUR)
    data = _files([200, 100, 48.5, 1], AT_FOUR, first=2 * SIZE)
    plan = plan_dledger_cleanup(old, data, cfg, AT_FOUR, time_source="mtime")
    assert plan.deleted_at.tolist()[:4] == [AT_FOUR, AT_FOUR + 10_000, AT_FOUR + 20_000, AT_FOUR + 20_000]
    assert plan.deleted_at[4] == -1 or plan.deleted_at[4] > AT_FOUR + H // 2
    assert plan.min_offset_after([f.base for f in old + data], AT_FOUR + 10_000) == 2 * SIZE
    # an old file not expired yet keeps every DLedger file, however old
    young = plan_dledger_cleanup(_files([100, 10], AT_FOUR), data, cfg, AT_FOUR, time_source="mtime",
                                 horizon_ms=24 * H)
    assert young.deleted_at.tolist() == [AT_FOUR, -1, -1, -1, -1, -1]
    assert "10 years" in young.reason[2]
    five = plan_dledger_cleanup(old, data, BrokerConfig(fileReservedTime=48, deleteWhen="04", brokerVersion="5"),
                                AT_FOUR, time_source="mtime")
    assert five.deleted_at.tolist() == [AT_FOUR, -1, -1, -1, -1, -1]
    assert "5.x" in five.reason[1] and "5.x" in five.reason[2]


def test_disk_passes_outside_the_delete_hour() -> None:
    """At 10:00 (not deleteWhen): nothing below the check ratio; above it the expired files go; above
    the force-clean ratio with cleanFileForciblyEnable every file but the last, 10 a pass, the next
    pass 9 sleeps of 100 ms and 100 ms of waiting later."""
    cfg = BrokerConfig(fileReservedTime=48, deleteWhen="04", diskMaxUsedSpaceRatio=75)
    data = _files([100, 80, 10, 1], AT_TEN)
    calm = plan_dledger_cleanup([], data, cfg, AT_TEN, time_source="mtime", disk_used_ratio=0.5, horizon_ms=H)
    assert (calm.deleted_at == -1).all() and calm.next_cleanup is None
    full = plan_dledger_cleanup([], data, cfg, AT_TEN, time_source="mtime", disk_used_ratio=0.8, horizon_ms=H)
    assert full.deleted_at.tolist() == [AT_TEN, AT_TEN, -1, -1] and full.rounds[0].trigger == "disk"
    many = _files([1] * 16, AT_TEN)
    forced = plan_dledger_cleanup([], many, cfg, AT_TEN, time_source="mtime", disk_used_ratio=0.9, horizon_ms=H)
    first = [AT_TEN] * DLEDGER_BATCH_MAX
    assert forced.deleted_at.tolist() == first + [AT_TEN + 1000] * 5 + [-1]
    assert forced.reason_kind[0] == "forced" and forced.rounds[0].forced
    off = BrokerConfig(fileReservedTime=48, deleteWhen="04", cleanFileForciblyEnable=False)
    assert (plan_dledger_cleanup([], many, off, AT_TEN, time_source="mtime", disk_used_ratio=0.9,
                                 horizon_ms=H).deleted_at == -1).all()


def test_audit_rows_and_text_on_a_dledger_store(tmp_path) -> None:
    """build_expiry_audit (no tables read: no consumer offsets) on a converted 4.9 store: the rows name
    the data files dledger-n0/data/<file>, the old files by their names, and the text gives the rule."""
    import pyarrow as pa

    from pipelines.audit import render
    from pipelines.tables.expiry_audit import CQ_INVENTORY_SCHEMA, INDEX_INVENTORY_SCHEMA, build_expiry_audit
    from pipelines.tables.schema import SEGMENTS_SCHEMA
    from store_format.timeutil import ms_to_datetime
    cfg = BrokerConfig(fileReservedTime=48, deleteWhen="04", brokerVersion="4", enableDLegerCommitLog=True)
    files = _files([100, 90], AT_FOUR) + _files([200, 100, 48.5, 1], AT_FOUR, first=2 * SIZE)
    segs = pa.Table.from_pylist([{"segment": f.name, "base_offset": f.base, "file_size": f.size,
                                  "bytes_written": f.size, "file_mtime": ms_to_datetime(f.mtime_ms), "records": 1,
                                  "status": "live"}
                                 for f in files], schema=SEGMENTS_SCHEMA)
    rows, summary = build_expiry_audit(str(tmp_path), cfg, segs, pa.Table.from_pylist([], schema=CQ_INVENTORY_SCHEMA),
                                       pa.Table.from_pylist([], schema=INDEX_INVENTORY_SCHEMA), as_of_ms=AT_FOUR,
                                       consumer_offsets=None, delay_offsets=None, run_id="r", time_source="mtime",
                                       dledger_from=2 * SIZE)
    names = [r["name"] for r in rows.to_pylist() if r["kind"] == "segment"]
    assert names == [files[0].name, files[1].name] + [f"dledger-n0/data/{f.name}" for f in files[2:]]
    going = [s["file"] for s in summary["segments"]]
    assert going == names[:4]
    text = render(summary)
    assert "cleanup rule     DLedger" in text and "fileReservedTime + 1 = 49 h" in text
    assert f"  dledger-n0/data/{files[3].name}  " in text and f"dledger-n0/data/{files[4].name}" not in text
