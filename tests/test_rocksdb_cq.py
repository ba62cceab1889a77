"""The RocksDB consume queue's key/value set (store_format.rocksdb_cq) and its writer
(pipelines.rocksdb_cq), without a broker; tests/test_rocksdb_cq_broker.py compares with the broker."""
from __future__ import annotations

import numpy as np
import pytest

from store_format.rocksdb_cq import checkpoint_key, cq_key, cq_value, offset_key, rocksdb_cq_entries


def test_keys_and_values_as_the_broker_lays_them_out():
    # bytes as the 5.5.1 broker wrote them (harness dump of a RocksDB consume queue)
    assert checkpoint_key() == bytes.fromhex("00000010") + b"\x01CHECKPOINT_TOPIC\x01max\x01" + bytes(4)
    assert cq_key("T0", 1, 2) == bytes.fromhex("0000000201") + b"T0" + bytes.fromhex("01000000010100000000000000" "02")
    assert offset_key("T0", 3, maximum=False) == \
        bytes.fromhex("0000000201") + b"T0\x01min\x01" + bytes.fromhex("00000003")
    assert cq_value(0x5FA5, 0x303, 0xD1457, 0x1A21D65D209).hex() == \
        "0000000000005fa50000030300000000000d1457000001a21d65d209"


def _entries(rows):
    queues = sorted({(t, q) for t, q, *_ in rows})
    number = {k: i for i, k in enumerate(queues)}
    cols = list(zip(*[(number[(t, q)], qo, off, size, tags, ts) for t, q, qo, off, size, tags, ts in rows]))
    return rocksdb_cq_entries(queues, *(np.array(c, dtype=np.int64) for c in cols))


def test_rules_last_unit_and_checkpoint():
    e = _entries([("A", 0, 1, 100, 50, 7, 1001),
                  ("B", 2, 5, 150, 60, 0, 1002),
                  ("A", 0, 1, 210, 40, 9, 1003),       # the same key again: the later unit stays
                  ("A", 0, 0, 250, 30, 0, 1004)])      # a lower queue offset last: still the max entry
    default = dict(e.default)
    assert cq_key("A", 0, 0) in default and default[cq_key("A", 0, 0)] == cq_value(250, 30, 0, 1004)
    assert default[cq_key("A", 0, 1)] == cq_value(210, 40, 9, 1003)
    assert len(default) == 3 and e.replaced == 1
    offset = dict(e.offset)
    assert offset[offset_key("A", 0)] == (250).to_bytes(8, "big") + (0).to_bytes(8, "big")
    assert offset[offset_key("B", 2)] == (150).to_bytes(8, "big") + (5).to_bytes(8, "big")
    assert offset[checkpoint_key()] == (280).to_bytes(8, "big")
    assert [k for k, _ in e.default] == sorted(default) and [k for k, _ in e.offset] == sorted(offset)


def test_written_database_reads_back(tmp_path):
    pytest.importorskip("rocksdict")
    from pipelines.rocksdb_cq import read_rocksdb_cq, write_rocksdb_cq

    e = _entries([(f"T{i % 3}", i % 4, i // 12, 100 + 50 * i, 50, i, 1000 + i) for i in range(500)])
    write_rocksdb_cq(tmp_path / "consumequeue", e)
    assert (tmp_path / "consumequeue" / "CURRENT").is_file()
    back = read_rocksdb_cq(tmp_path / "consumequeue")
    assert back["default"] == e.default and back["offset"] == e.offset


def test_the_record_at_offset_zero_is_read_but_not_dispatched(tmp_path):
    """A rebuild into an empty RocksDB consume queue dispatches nothing at commitlog offset 0: the walk's
    result keeps that record among those read, not dispatched (no queue unit, no index key, no light
    queue unit), and every other record with its keys as it was."""
    from store_format import commitlog as cl
    from store_format.config import load_broker_config
    from store_format.dispatch import queue_units
    from store_format.reput import walk_store
    from store_format.rocksdb_cq import undispatch_first_record
    from store_format.sample import generate_sample_store
    from store_format.store import open_store

    config = load_broker_config("mappedFileSizeCommitLog=1048576\nenableMultiDispatch=true\nenableLmq=true\n")
    generate_sample_store(str(tmp_path / "s"), config, messages=300, seed=5)
    _seg, res = next(iter(walk_store(open_store(str(tmp_path / "s"), config), config)))
    assert res.rec[0, cl.R_PHYS] == 0 and res.rec[0, cl.R_KEY_COUNT] > 0
    out = undispatch_first_record(res)
    assert len(out.rec) == len(res.rec) and out.rec[0, cl.R_STATUS] == cl.Status.BELOW_ROCKSDB_START
    assert res.rec[0, cl.R_STATUS] == cl.Status.DISPATCHED and out.rec[0, cl.R_KEY_COUNT] == 0
    n0 = int(res.rec[0, cl.R_KEY_COUNT])
    assert len(out.key) == len(res.key) - n0 and (out.key[:, cl.K_REC] != 0).all()
    assert (np.delete(out.rec[1:], cl.R_KEY_FIRST, axis=1) == np.delete(res.rec[1:], cl.R_KEY_FIRST, axis=1)).all()
    for r in range(1, len(out.rec)):   # every other record still finds its own keys
        a, b, c = int(out.rec[r, cl.R_KEY_FIRST]), int(res.rec[r, cl.R_KEY_FIRST]), int(out.rec[r, cl.R_KEY_COUNT])
        assert (out.key[a:a + c, cl.K_REC] == r).all() and (out.key[a:a + c] == res.key[b:b + c]).all()
    assert (out.lmq[:, cl.L_REC] != 0).all() and len(out.lmq) == int((res.lmq[:, cl.L_REC] != 0).sum())
    before, after = queue_units(res), queue_units(out)
    assert 0 in before.record and 0 not in after.record and len(after) == len(before) - int((before.record == 0).sum())
    assert undispatch_first_record(out) is out   # nothing dispatched at offset 0 any more
