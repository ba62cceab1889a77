"""``--as-restart`` over a store that already holds topic "" queue 0's files (:mod:`store_format.empty_request_held`):
the blanks' empty requests the restart dispatches write their units over the start of the files they open, every other
byte and file kept, a shorter file grown to the file size; with none dispatched every such file is kept.  Through
:func:`store_format.empty_request_held.empty_request_queue_files`, the one place both the 5.x concurrent reput's empty
requests and those a DLedger start's reput set inside an entry dispatches go through (``pipelines.rebuild``).  The
broker cases: tests/test_empty_request_held_broker.py (files planted before the restart), and over a store
without them tests/test_dledger_2gib_inside_broker.py (``-embedded-blank-48``) and
tests/test_concurrent_empty_requests_broker.py."""
from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from pipelines.build import write_file
from store_format.config import BrokerConfig
from store_format.empty_request_held import empty_request_queue_files
from store_format.errors import UnsupportedConfigError
from store_format.store import StoreLocation

CQ_SIZE = 120
EXT_SIZE = 192   # nine ext units a file: twelve empty requests fill two


def _config(ext: bool = False) -> BrokerConfig:
    more = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": str(EXT_SIZE)} if ext else {}
    return BrokerConfig.from_properties({"brokerVersion": "5", "mappedFileSizeConsumeQueue": str(CQ_SIZE), **more})


def _store(root: Path) -> StoreLocation:
    return StoreLocation(str(root), pafs.LocalFileSystem(), str(root), [])


def _put(root: Path, rel: str, data: bytes) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


def _as_written(tmp: Path, files: list[tuple[str, list]]) -> dict[str, bytes]:
    """The bytes :func:`pipelines.build.write_file` writes for ``files``."""
    for rel, pieces in files:
        write_file(str(tmp), rel, pieces)
    return {rel: (tmp / rel).read_bytes() for rel, _ in files}


def test_no_file_there_is_written_from_scratch(tmp_path: Path) -> None:
    (tmp_path / "store" / "consumequeue" / "T0" / "0").mkdir(parents=True)
    files = empty_request_queue_files(_config(), 1, _store(tmp_path / "store"))
    assert [rel for rel, _ in files] == [f"consumequeue/0/{0:020d}"]
    assert _as_written(tmp_path / "w", files)[f"consumequeue/0/{0:020d}"] == bytes(CQ_SIZE)   # the unit (0, 0, 0)


def test_a_file_of_other_bytes_gets_the_unit_over_its_start(tmp_path: Path) -> None:
    store = tmp_path / "store"
    held = bytes(range(1, CQ_SIZE + 1))
    _put(store, f"consumequeue/0/{0:020d}", held)
    _put(store, f"consumequeue/0/{CQ_SIZE:020d}", b"\x05" * 7)   # a file no request opens: kept
    got = _as_written(tmp_path / "w", empty_request_queue_files(_config(), 3, _store(store)))
    assert got == {f"consumequeue/0/{0:020d}": bytes(20) + held[20:], f"consumequeue/0/{CQ_SIZE:020d}": b"\x05" * 7}
    # a rebuild (no --as-restart): written from scratch
    assert _as_written(tmp_path / "r", empty_request_queue_files(_config(), 1, None)) == {
        f"consumequeue/0/{0:020d}": bytes(CQ_SIZE)}
    # no empty request: the store's files kept as they are
    assert _as_written(tmp_path / "n", empty_request_queue_files(_config(), 0, _store(store))) == {
        f"consumequeue/0/{0:020d}": held, f"consumequeue/0/{CQ_SIZE:020d}": b"\x05" * 7}


def test_a_shorter_file_grows_to_the_file_size(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _put(store, f"consumequeue/0/{0:020d}", b"\x09" * 50)
    got = _as_written(tmp_path / "w", empty_request_queue_files(_config(), 1, _store(store)))
    assert got == {f"consumequeue/0/{0:020d}": bytes(20) + b"\x09" * 30 + bytes(CQ_SIZE - 50)}


def test_a_folder_where_the_file_opens_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "consumequeue" / "0" / f"{0:020d}").mkdir(parents=True)
    with pytest.raises(UnsupportedConfigError, match=r"consumequeue/0/0+ is a folder"):
        empty_request_queue_files(_config(), 1, _store(store))
    assert empty_request_queue_files(_config(), 0, _store(store)) == []


def test_a_file_of_the_same_bytes_is_kept(tmp_path: Path) -> None:
    """The store's file as an earlier empty request left it: the broker writes the same unit over it."""
    store = tmp_path / "store"
    written = _as_written(tmp_path / "w", empty_request_queue_files(_config(), 1))
    for rel, data in written.items():
        _put(store, rel, data)
    assert _as_written(tmp_path / "v", empty_request_queue_files(_config(), 1, _store(store))) == written


def test_topic_0_queue_folders_are_not_that_queues_files(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _put(store, f"consumequeue/0/0/{0:020d}", b"\x07" * CQ_SIZE)   # topic "0" queue 0
    _put(store, f"consumequeue/0/3/{0:020d}", b"\x07" * CQ_SIZE)
    files = empty_request_queue_files(_config(), 2, _store(store))
    assert [rel for rel, _ in files] == [f"consumequeue/0/{0:020d}"]


def test_ext_files_an_earlier_run_filled_further_keep_their_later_units(tmp_path: Path) -> None:
    """With ext files: twelve empty requests before, one now: the broker rewrites the first ext unit only, and keeps
    the rest (and the ext file after it)."""
    store = tmp_path / "store"
    before = _as_written(tmp_path / "before", empty_request_queue_files(_config(ext=True), 12))
    assert sum(rel.startswith("consumequeue_ext/0/") for rel in before) > 1, before.keys()
    for rel, data in before.items():
        _put(store, rel, data)
    one = _as_written(tmp_path / "one", empty_request_queue_files(_config(ext=True), 1))
    got = _as_written(tmp_path / "w", empty_request_queue_files(_config(ext=True), 1, _store(store)))
    assert sorted(got) == sorted(before) and got != one
    for rel, data in got.items():   # each file: the one request's bytes over its start, the rest the store's
        new = one.get(rel, b"")
        written = 20 if new else 0
        assert data == new[:written] + before[rel][written:], rel
    assert _as_written(tmp_path / "t", empty_request_queue_files(_config(ext=True), 12, _store(store))) == before
