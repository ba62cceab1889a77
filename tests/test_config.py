"""broker.conf parsing, the broker's defaults, and settings refused with a clear message."""
from __future__ import annotations

import pytest

from store_format.config import BrokerConfig, load_broker_config, parse_delay_levels
from store_format.errors import UnsupportedConfigError
from store_format.javaproperties import parse_java_properties


def test_defaults_are_the_brokers():
    c = load_broker_config(None)
    assert c.mappedFileSizeCommitLog == 1 << 30
    assert c.cq_file_size == 300_000 * 20
    assert (c.maxHashSlotNum, c.maxIndexNum) == (5_000_000, 20_000_000)
    assert c.index_entries_per_file == 19_999_999
    assert c.delay_levels_ms[:3] == (1000, 5000, 10000) and c.delay_levels_ms[-1] == 7_200_000
    assert c.messageIndexEnable and not c.enableMultiDispatch and c.is_master


def test_delay_levels_not_loaded_is_no_setting():
    """``delay_levels_loaded`` (a 4.9.8 abnormal recovery's dispatch) is derived, never read from or written as a
    broker.conf setting."""
    c = BrokerConfig(delay_levels_loaded=False)
    assert c.delay_levels_ms == ()
    assert "delay_levels_loaded" not in c.as_properties()
    assert BrokerConfig.from_properties({"delay_levels_loaded": "false"}).delay_levels_loaded


def test_java_properties_syntax():
    props = parse_java_properties("# comment\n! other\nkey1=v1\nkey2 : v2\nkey3 v3\n  key4=a\\\n   b\nkey\\ 5=x\\ty\n")
    assert props == {"key1": "v1", "key2": "v2", "key3": "v3", "key4": "ab", "key 5": "x\ty"}


def test_consume_queue_size_rounds_up_to_whole_units():
    assert load_broker_config("mappedFileSizeConsumeQueue=6001").cq_file_size == 6020
    assert load_broker_config("mappedFileSizeConsumeQueue=6000").cq_file_size == 6000


def test_booleans_follow_boolean_parse_boolean():
    c = load_broker_config("enableMultiDispatch=TRUE\nenableLmq=yes\nmessageIndexEnable=false")
    assert c.enableMultiDispatch and not c.enableLmq and not c.messageIndexEnable


def test_delay_levels_with_days():
    assert parse_delay_levels("1s 2m 3h 1d") == (1000, 120_000, 10_800_000, 86_400_000)


@pytest.mark.parametrize("text, words", [
    ("enableConsumeQueueExt=true\nenableCalcFilterBitMap=true", "enableCalcFilterBitMap=true.*live"),
    ("enableConsumeQueueExt=true\nmappedFileSizeConsumeQueueExt=23", "mappedFileSizeConsumeQueueExt=23"),
    ("storeType=rocksdb", "storeType=rocksdb"),
    ("storeType=defaultRocksDB\nbrokerVersion=4", "5.x only"),
    ("duplicationEnable=true", "duplicationEnable"),
    ("maxIndexNum=1", "maxIndexNum"),
    ("maxHashSlotNum=zero", "whole number"),
    ("messageDelayLevel=1s 5x", "messageDelayLevel"),
])
def test_unsupported_settings_are_refused_with_the_setting_named(text, words):
    with pytest.raises(UnsupportedConfigError, match=words):
        load_broker_config(text)


def test_consume_queue_ext_is_read():
    """enableConsumeQueueExt without filter bitmaps is rebuilt (store_format.consumequeue_ext); the
    bitmap setting alone (no ext files) changes nothing; a tiny ext file size without ext is no error."""
    c = load_broker_config("enableConsumeQueueExt=true\nmappedFileSizeConsumeQueueExt=1024")
    assert c.enableConsumeQueueExt and c.mappedFileSizeConsumeQueueExt == 1024
    assert BrokerConfig().mappedFileSizeConsumeQueueExt == 48 * 1024 * 1024
    assert load_broker_config("enableCalcFilterBitMap=true\nmappedFileSizeConsumeQueueExt=1").enableCalcFilterBitMap


def test_unknown_keys_are_ignored_like_the_broker_does():
    assert load_broker_config("brokerClusterName=DefaultCluster\nlistenPort=10911") == BrokerConfig()
