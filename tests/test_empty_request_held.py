"""``--as-restart`` whose restart dispatches blanks' empty requests (topic "" queue 0) over a store that already holds
that queue's files (:mod:`store_format.empty_request_held`): refused in one line (exit 2) unless each such file holds
the very bytes the rebuild writes, through :func:`store_format.concurrent_reput.empty_request_queue_files`, the one
place both the 5.x concurrent reput's empty requests (``pipelines.rebuild``) and those a DLedger start's reput set
inside an entry dispatches (``pipelines.restart.dledger_restart``) go through.  The broker case of the files written
over a store without them: tests/test_dledger_2gib_inside_broker.py (``-embedded-blank-48``) and
tests/test_concurrent_empty_requests_broker.py."""
from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from pipelines.build import write_file
from store_format.concurrent_reput import empty_request_queue_files
from store_format.config import BrokerConfig
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


def test_a_file_of_other_bytes_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _put(store, f"consumequeue/0/{0:020d}", bytes(20) + b"\x01" + bytes(CQ_SIZE - 21))
    with pytest.raises(UnsupportedConfigError, match=r'topic "" queue 0, and the store already holds consumequeue/0/0+ '
                                                     "with other bytes than they write"):
        empty_request_queue_files(_config(), 1, _store(store))
    empty_request_queue_files(_config(), 1, None)   # a rebuild (no --as-restart): written from scratch
    empty_request_queue_files(_config(), 0, _store(store))   # no empty request: nothing written there


def test_a_file_of_the_same_bytes_is_kept(tmp_path: Path) -> None:
    """The store's file as an earlier empty request left it: the broker writes the same unit over it."""
    store = tmp_path / "store"
    written = _as_written(tmp_path / "w", empty_request_queue_files(_config(), 1))
    for rel, data in written.items():
        _put(store, rel, data)
    empty_request_queue_files(_config(), 1, _store(store))


def test_topic_0_queue_folders_are_not_that_queues_files(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _put(store, f"consumequeue/0/0/{0:020d}", b"\x07" * CQ_SIZE)   # topic "0" queue 0
    _put(store, f"consumequeue/0/3/{0:020d}", b"\x07" * CQ_SIZE)
    empty_request_queue_files(_config(), 2, _store(store))


def test_ext_files_an_earlier_run_filled_further_are_refused(tmp_path: Path) -> None:
    """With ext files: twelve empty requests before, one now: the broker rewrites the first ext unit only, and keeps
    the rest (and the ext file after it); the rebuild would write one unit."""
    store = tmp_path / "store"
    before = _as_written(tmp_path / "before", empty_request_queue_files(_config(ext=True), 12))
    assert sum(rel.startswith("consumequeue_ext/0/") for rel in before) > 1, before.keys()
    for rel, data in before.items():
        _put(store, rel, data)
    with pytest.raises(UnsupportedConfigError, match="already holds consumequeue_ext/0/"):
        empty_request_queue_files(_config(ext=True), 1, _store(store))
    empty_request_queue_files(_config(ext=True), 12, _store(store))   # the same requests: the same bytes
