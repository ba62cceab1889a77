"""ConsumeQueueExt kernels (store_format.consumequeue_ext) and the rules the broker test cannot reach:
a consume queue unit skipped as written "repeatedly" still puts its ext unit (ConsumeQueue
.putMessagePositionInfoWrapper puts it before putMessagePositionInfo), read from the Java source.
The byte-for-byte comparison with the broker is tests/test_cqext_broker.py."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from store_format.config import BrokerConfig
from store_format.consumequeue_ext import (
    EXT_UNIT_SIZE,
    build_ext_file,
    ext_addresses,
    ext_ordinals,
    ext_real_offsets,
    ext_units_per_file,
)
from store_format.errors import UnsupportedConfigError
from store_format.reput import rebuild_in_memory
from store_format.store import open_store
from store_format.writer import CommitLogWriter

LONG_MIN = -(1 << 63)


def test_units_per_file_keep_four_bytes_free() -> None:
    assert ext_units_per_file(48 * 1024 * 1024) == (48 * 1024 * 1024 - 4) // 20
    assert ext_units_per_file(104) == 5 and ext_units_per_file(103) == 4 and ext_units_per_file(24) == 1
    assert ext_real_offsets(np.arange(7), 110).tolist() == [0, 20, 40, 60, 80, 110, 130]
    assert ext_addresses(np.array([0, 5]), 104).tolist() == [LONG_MIN, LONG_MIN + 104]


def test_ext_file_bytes() -> None:
    data, tail = build_ext_file(110, np.array([-5, 7]), np.array([1_700_000_000_000, 1]), end_mark=False)
    assert len(data) + tail == 110 and len(data) == 2 * EXT_UNIT_SIZE
    assert data[:20].tobytes() == ((20).to_bytes(2, "big") + (-5).to_bytes(8, "big", signed=True)
                                   + (1_700_000_000_000).to_bytes(8, "big") + bytes(2))
    data, tail = build_ext_file(104, np.zeros(5, np.int64), np.zeros(5, np.int64), end_mark=True)
    assert len(data) == 102 and data[100:].tobytes() == b"\xff\xff" and tail == 2


def test_ordinals_continue_per_queue() -> None:
    counts = np.array([3, 0], dtype=np.int64)
    assert ext_ordinals(np.array([1, 0, 1, 0]), counts).tolist() == [0, 3, 1, 4]
    assert counts.tolist() == [5, 2]


def _rebuild(root: Path, out: Path, conf: Path) -> None:
    from pipelines.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["rebuild", "--store", str(root), "--out", str(out), "--config", str(conf), "--engine", "local",
                     "--no-tables"])
    assert code == 0, err.getvalue()[-2000:]


def test_a_repeated_unit_still_puts_its_ext_unit(tmp_path: Path) -> None:
    """Queue offsets 0, 1, 1: the third unit is skipped by the consume queue, but its ext unit is put
    (at 40); LMQ-less, one queue, tags hash in the ext units, ext addresses in the consume queue."""
    cfg = BrokerConfig(mappedFileSizeCommitLog=4096, enableConsumeQueueExt=True)
    root = tmp_path / "store"
    with CommitLogWriter(str(root), cfg) as w:
        for i, qoff in enumerate([0, 1, 1, 2]):
            w.append("T", 0, body=b"x", properties={"TAGS": "a"}, queue_offset=qoff,
                     store_timestamp=1_700_000_000_000 + i)
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=4096\nenableConsumeQueueExt=true\nmappedFileSizeConsumeQueueExt=1024\n")
    _rebuild(root, tmp_path / "out", conf)
    cq = (tmp_path / "out" / "consumequeue" / "T" / "0" / ("0" * 20)).read_bytes()
    tags = [int.from_bytes(cq[i + 12:i + 20], "big", signed=True) for i in range(0, 60, 20)]
    assert tags == [LONG_MIN, LONG_MIN + 20, LONG_MIN + 60] and cq[60:80] == bytes(20)
    ext = (tmp_path / "out" / "consumequeue_ext" / "T" / "0" / ("0" * 20)).read_bytes()
    assert len(ext) == 1024 and ext[80:] == bytes(1024 - 80)
    times = [int.from_bytes(ext[i + 10:i + 18], "big") for i in range(0, 80, 20)]
    assert times == [1_700_000_000_000 + i for i in range(4)]
    assert {int.from_bytes(ext[i + 2:i + 10], "big", signed=True) for i in range(0, 80, 20)} == {ord("a")}


def test_rebuild_without_ext_replaces_an_old_ext_folder(tmp_path: Path) -> None:
    """--overwrite: consumequeue_ext/ of an earlier rebuild with ext goes aside with consumequeue/."""
    from pipelines.cli import main
    cfg = BrokerConfig(mappedFileSizeCommitLog=4096)
    root = tmp_path / "store"
    with CommitLogWriter(str(root), cfg) as w:
        w.append("T", 0, body=b"x")
    conf = tmp_path / "broker.conf"
    conf.write_text("mappedFileSizeCommitLog=4096\nenableConsumeQueueExt=true\n")
    out = tmp_path / "out"
    _rebuild(root, out, conf)
    assert (out / "consumequeue_ext" / "T" / "0").is_dir()
    conf.write_text("mappedFileSizeCommitLog=4096\n")
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert main(["rebuild", "--store", str(root), "--out", str(out), "--config", str(conf), "--engine", "local",
                     "--no-tables", "--overwrite"]) == 0
    assert not (out / "consumequeue_ext").exists() and (out / "consumequeue" / "T" / "0").is_dir()


def test_in_memory_rebuild_refuses_ext(tmp_path: Path) -> None:
    cfg = BrokerConfig(mappedFileSizeCommitLog=4096, enableConsumeQueueExt=True)
    with CommitLogWriter(str(tmp_path), cfg) as w:
        w.append("T", 0, body=b"x")
    with pytest.raises(UnsupportedConfigError, match="ConsumeQueueExt"):
        rebuild_in_memory(open_store(str(tmp_path), cfg), cfg)
