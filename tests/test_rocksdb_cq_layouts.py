"""Settings beside ``storeType=defaultRocksDB`` (unit tests; the broker cases are in
:mod:`test_rocksdb_cq_layouts_broker`): ``enableConsumeQueueExt`` accepted and ignored with a warning,
a DLedger commitlog accepted for ``rebuild``, ``verify``, ``repair`` and ``audit`` and refused in one line for
``rebuild --as-restart``, BatchCQ
topics read as ordinary queues."""
from __future__ import annotations

import json
import logging

import pytest

from store_format.config import BrokerConfig, load_broker_config
from store_format.errors import UnsupportedConfigError
from store_format.store import open_store


def test_consume_queue_ext_is_ignored_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="store_format.config"):
        c = load_broker_config("storeType=defaultRocksDB\nenableConsumeQueueExt=true\nenableCalcFilterBitMap=true\n"
                               "mappedFileSizeConsumeQueueExt=23")
    assert c.rocksdb_cq and not c.enableConsumeQueueExt
    lines = [r.getMessage() for r in caplog.records if "enableConsumeQueueExt" in r.getMessage()]
    assert len(lines) == 1 and "ignored" in lines[0] and lines[0].startswith("broker.conf line 2: ")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="store_format.config"):   # the loader says it, not each copy
        again = BrokerConfig.from_properties({"storeType": "defaultRocksDB", "enableConsumeQueueExt": "true"})
    assert not again.enableConsumeQueueExt and not caplog.records


def test_dledger_is_accepted_and_the_restart_commands_refused():
    c = load_broker_config("storeType=defaultRocksDB\nenableDLegerCommitLog=true\ndLegerPeers=n0-127.0.0.1:1")
    assert c.rocksdb_cq and c.enableDLegerCommitLog
    with pytest.raises(UnsupportedConfigError, match="enableDLegerCommitLog=true: rebuild --as-restart .* is not "
                                                     "modelled"):
        c.refuse_rocksdb_dledger("rebuild --as-restart (the DLedger crash restart)")
    load_broker_config("enableDLegerCommitLog=true\ndLegerPeers=n0-127.0.0.1:1").refuse_rocksdb_dledger("rebuild")
    load_broker_config("storeType=defaultRocksDB").refuse_rocksdb_dledger("rebuild")


def test_batch_topics_are_ordinary_queues_with_a_rocksdb_consume_queue(tmp_path):
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / f"{0:020d}").write_bytes(bytes(4096))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "topics.json").write_text(json.dumps(
        {"topicConfigTable": {"BT0": {"topicName": "BT0", "attributes": {"queue.type": "BatchCQ"}}}}))
    rocks = load_broker_config("storeType=defaultRocksDB\nmappedFileSizeCommitLog=4096\nbrokerVersion=5")
    assert open_store(str(tmp_path), rocks).batch_topics == frozenset()
    files = load_broker_config("mappedFileSizeCommitLog=4096\nbrokerVersion=5")
    assert open_store(str(tmp_path), files).batch_topics == frozenset({"BT0"})
