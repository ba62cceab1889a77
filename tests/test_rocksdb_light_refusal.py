"""``rebuild`` of a RocksDB consume queue store (``storeType=defaultRocksDB``) whose multi-dispatch requests
``RocksDBConsumeQueueStore.dispatchLMQ`` fails on (a queue offset ``Long.parseLong`` refuses: what the broker's group
commit then loses is its threads' timing, :func:`store_format.rocksdb_cq.light_units_unmodelled`): one line, exit 2.
What it does model goes on: a name holding '/' at offset 0 (the file queues skip it before parsing), an empty name
(tests/test_rocksdb_light_empty_broker.py), and any request without ``enableLmq`` (``dispatchLMQ`` reads none then).
Synthetic commitlogs (the broker's own stores: ``tests/test_rocksdb_light_broker.py``)."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from store_format.config import BrokerConfig
from store_format.writer import CommitLogWriter

pytest.importorskip("rocksdict")

CONF = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": "4096", "maxHashSlotNum": "5", "maxIndexNum": "10",
        "enableMultiDispatch": "true", "brokerVersion": "5"}


def _rebuild(tmp_path: Path, lmq: str, offsets: str, enable_lmq: bool = True) -> tuple[int, list[str], Path]:
    """A store of three records, the second (T/1) asking for light queues ``lmq`` at ``offsets``, rebuilt:
    exit code, the ``error:`` lines, the output folder."""
    from pipelines.cli import main

    conf = {**CONF, "enableLmq": str(enable_lmq).lower()}
    cfg = BrokerConfig(mappedFileSizeCommitLog=4096, brokerVersion="5")
    with CommitLogWriter(str(tmp_path / "store"), cfg) as w:
        w.append(topic="T", queue_id=0, body=b"ok", store_timestamp=1_700_000_000_000)
        w.append(topic="T", queue_id=1, body=b"x", store_timestamp=1_700_000_000_000,
                 properties={"INNER_MULTI_DISPATCH": lmq, "INNER_MULTI_QUEUE_OFFSET": offsets})
        w.append(topic="T", queue_id=0, body=b"y", store_timestamp=1_700_000_000_000)
    (tmp_path / "broker.conf").write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["rebuild", "--store", str(tmp_path / "store"), "--config", str(tmp_path / "broker.conf"),
                     "--out", str(tmp_path / "out"), "--engine", "local", "--no-tables"])
    return code, [ln for ln in err.getvalue().splitlines() if ln.startswith("error:")], tmp_path / "out"


@pytest.mark.parametrize("lmq,offsets", [("%LMQ%a", "x1"), ("%LMQ%b/c", "x1"), (",%LMQ%c", "2,x3"),
                                         ("%LMQ%a,,%LMQ%c", "1,,3")],
                         ids=["bad-offset", "slashed-bad-offset", "empty-name-bad-offset-after",
                              "empty-name-empty-offset"])
def test_unmodelled_light_units_are_refused_in_one_line(tmp_path: Path, lmq: str, offsets: str) -> None:
    code, errors, _ = _rebuild(tmp_path, lmq, offsets)
    assert code == 2 and len(errors) == 1, errors
    assert "dispatchLMQ" in errors[0] and "offset that is no long" in errors[0] and "timing" in errors[0], errors[0]


def _light_keys(out: Path) -> list[bytes]:
    from pipelines.rocksdb_cq import read_rocksdb_cq

    return [k for k, _ in read_rocksdb_cq(out / "consumequeue")["default"] if b"%LMQ%" in k]


def test_a_slashed_name_at_offset_zero_is_rebuilt(tmp_path: Path) -> None:
    """Its offset is parsed (0), so the unit is put like any other (the file queues' rule skipped it)."""
    from store_format.rocksdb_cq import cq_key

    code, errors, out = _rebuild(tmp_path, "%LMQ%b/c", "0")
    assert code == 0, errors
    assert _light_keys(out) == [cq_key("%LMQ%b/c", 0, 0)]


def test_without_enable_lmq_no_light_unit_is_read(tmp_path: Path) -> None:
    """``enableMultiDispatch`` alone: ``dispatchLMQ`` reads no request, a bad offset neither."""
    code, errors, out = _rebuild(tmp_path, "%LMQ%a", "x1", enable_lmq=False)
    assert code == 0, errors
    assert _light_keys(out) == []
