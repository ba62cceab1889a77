"""A light queue offset the broker cannot parse: the rebuild goes on (as before) and says what the broker
would do instead (its reput retries that record forever)."""
from __future__ import annotations

from pathlib import Path

from pipelines.rebuild import run_rebuild
from store_format.config import BrokerConfig
from store_format.writer import CommitLogWriter


def test_an_unparsable_light_queue_offset_is_an_anomaly(tmp_path: Path) -> None:
    cfg = BrokerConfig(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=200, maxHashSlotNum=5,
                       maxIndexNum=10, enableMultiDispatch=True, enableLmq=True)
    with CommitLogWriter(str(tmp_path / "store"), cfg) as w:
        w.append(topic="T", queue_id=0, body=b"ok", store_timestamp=1_700_000_000_000)
        w.append(topic="T", queue_id=1, body=b"x", store_timestamp=1_700_000_000_000,
                 properties={"INNER_MULTI_DISPATCH": "%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "9223372036854775808"})
        w.append(topic="T", queue_id=0, body=b"y", store_timestamp=1_700_000_000_000)
    summary = run_rebuild(str(tmp_path / "store"), str(tmp_path / "out"), cfg, engine="local")
    found = [a for a in summary.anomalies if a["kind"] == "lmq_offset_unparsable"]
    assert len(found) == 1
    assert "1 record(s)" in found[0]["detail"] and "'%LMQ%a'" in found[0]["detail"]
    assert "retries it forever" in found[0]["detail"]
    assert summary.anomaly_count >= 1
    # the rebuild itself went on: the record after it has its unit
    assert summary.consume_queue_units == 3


def test_parsable_light_queue_offsets_are_no_anomaly(tmp_path: Path) -> None:
    cfg = BrokerConfig(mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=200, maxHashSlotNum=5,
                       maxIndexNum=10, enableMultiDispatch=True, enableLmq=True)
    with CommitLogWriter(str(tmp_path / "store"), cfg) as w:
        w.append(topic="T", queue_id=1, body=b"x", store_timestamp=1_700_000_000_000,
                 properties={"INNER_MULTI_DISPATCH": "%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "0"})
    summary = run_rebuild(str(tmp_path / "store"), str(tmp_path / "out"), cfg, engine="local")
    assert not [a for a in summary.anomalies if a["kind"] == "lmq_offset_unparsable"]
    assert summary.consume_queue_units == 2
