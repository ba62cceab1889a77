"""Fuzzing the decoder with mutated broker-written records.

A window of a few KB starting at a record of a golden segment (``../shared/golden/*/store/commitlog``)
is mutated (bits flipped, bytes inserted, deleted or overwritten, a length field set to an extreme
value) and laid into a small synthetic store of one or two 64 KiB segments.  The store is then
walked the ways the rebuild walks it:

* ``store_format.reput.rebuild_in_memory`` — the whole sequential reput: record walk, consume
  queue and index files, names;
* ``store_format.commitlog.resync`` from a random position, then ``walk_range`` from there (what a
  split that does not start a segment does), and ``store_format.records.detail_columns`` on the
  result (hosts, msgIds, properties, keys).

Any exception other than the documented ``store_format.errors.StoreError`` fails the test; a walk
that hangs is stopped by a watchdog (``faulthandler``) that ends the run with a traceback.

CI runs ``FUZZ_EXAMPLES`` examples (default 400: about 10 s here, fixed seed); for a long run::

    FUZZ_EXAMPLES=20000 nice -n 19 .venv/bin/python -m pytest -q tests/test_fuzz_decoder.py
"""
from __future__ import annotations

import faulthandler
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from store_format import commitlog as cl
from store_format import dispatch
from store_format.config import load_broker_config
from store_format.errors import StoreError
from store_format.layout import OFF_BODY_CRC, OFF_MAGIC, OFF_QUEUE_ID, OFF_SYSFLAG, OFF_TOTAL_SIZE
from store_format.records import detail_columns
from store_format.reput import rebuild_in_memory
from store_format.store import open_store

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden"
CASES = ["basic-4.9.8", "features-4.9.8", "longtopic-5.3.3", "lmq-4.9.8", "corrupt-4.9.8", "basic-5.3.3"]
SEGMENT = 64 * 1024
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "400"))
HANG_SECONDS = 120

pytestmark = pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"no golden stores at {GOLDEN}")


@cache
def _segment(case: str, which: int) -> tuple[bytes, tuple[int, ...]]:
    """A golden segment's bytes and the positions of its records (walked once, unmutated)."""
    files = sorted((GOLDEN / case / "store" / "commitlog").iterdir())
    path = files[which % len(files)]
    data = path.read_bytes()
    config = load_broker_config((GOLDEN / case / "broker.conf").read_text())
    res = cl.walk_range(lambda pos, n: data[pos:pos + n], int(path.name), len(data),
                        cl.WalkState.at_slice_start(0, len(data)), len(data), config)
    return data, tuple(int(p) for p in res.rec[:, cl.R_POS])


EXTREMES = [0, 1, -1, 2, 7, 8, 19, 20, 91, 127, 128, 255, 256, 32767, 32768, 65535, 65536, 2**31 - 1, -(2**31),
            2**30, -8, 4096]
# offsets of length fields a few records into a window are unknown; put extremes at record heads
# (totalSize, magic, CRC, queueId, sysFlag) and anywhere else as 4-, 2- or 1-byte values
HEAD_FIELDS = [OFF_TOTAL_SIZE, OFF_MAGIC, OFF_BODY_CRC, OFF_QUEUE_ID, OFF_SYSFLAG]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(0, 7)),
    st.tuples(st.just("set"), st.integers(0, 1 << 16), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 16), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 16), st.integers(1, 256)),
    st.tuples(st.just("overwrite"), st.integers(0, 1 << 16), st.binary(min_size=1, max_size=32)),
    st.tuples(st.just("head"), st.integers(0, 40), st.sampled_from(HEAD_FIELDS), st.sampled_from(EXTREMES)),
    st.tuples(st.just("int"), st.integers(0, 1 << 16), st.sampled_from([1, 2, 4, 8]), st.sampled_from(EXTREMES)),
)


def _mutate(window: bytearray, record_starts: list[int], ops: list[tuple]) -> bytearray:
    for op in ops:
        kind, raw = op[0], op[1]
        if not window:
            break
        # hypothesis favours small numbers: spread them over the window (the map is fixed, so
        # failing examples still shrink)
        at = raw if kind == "head" else raw * 2654435761 % (1 << 32)
        if kind == "flip":
            window[at % len(window)] ^= 1 << op[2]
        elif kind == "set":
            window[at % len(window)] = op[2]
        elif kind == "insert":
            pos = at % (len(window) + 1)
            window[pos:pos] = op[2]
        elif kind == "delete":
            pos = at % len(window)
            del window[pos:pos + op[2]]
        elif kind == "overwrite":
            pos = at % len(window)
            window[pos:pos + len(op[2])] = op[2]
        elif kind == "head" and record_starts:
            pos = record_starts[at % len(record_starts)] + op[2]
            if pos + 4 <= len(window):
                window[pos:pos + 4] = (op[3] % (1 << 32)).to_bytes(4, "big")
        elif kind == "int":
            width, pos = op[2], at % len(window)
            if pos + width <= len(window):
                window[pos:pos + width] = (op[3] % (1 << (8 * width))).to_bytes(width, "big")
    return window


@st.composite
def stores(draw):
    case = draw(st.sampled_from(CASES))
    segments = draw(st.integers(1, 2))
    laid = []
    for _ in range(segments):
        data, starts = _segment(case, draw(st.integers(0, 50)))
        first = draw(st.integers(0, max(len(starts) - 1, 0))) if starts else 0
        begin = starts[first] if starts else 0
        size = draw(st.integers(1024, 24 * 1024))
        window = bytearray(data[begin:begin + size])
        local_starts = [p - begin for p in starts if begin <= p < begin + size]
        ops = draw(st.lists(mutation, min_size=0, max_size=6))
        window = _mutate(window, local_starts, ops)[:SEGMENT]
        # a segment ends with a blank record (its remaining size, then the blank magic) or zeros
        tail = draw(st.sampled_from(["zeros", "blank", "none"]))
        laid.append((bytes(window), tail))
    version = {"4.9.8": "4", "5.3.3": "5"}[case.rsplit("-", 1)[1]]
    conf = {
        "mappedFileSizeCommitLog": SEGMENT,
        "mappedFileSizeConsumeQueue": draw(st.sampled_from([20, 60, 200, 6000])),
        "maxHashSlotNum": draw(st.sampled_from([1, 7, 500])),
        "maxIndexNum": draw(st.sampled_from([2, 4, 50, 2000])),
        "brokerVersion": draw(st.sampled_from([version, version, version, "auto", "4", "5"])),
        "brokerId": draw(st.sampled_from([0, 0, 1])),
        "enableMultiDispatch": draw(st.booleans()),
        "enableLmq": draw(st.booleans()),
        "messageIndexEnable": draw(st.sampled_from(["true", "true", "false"])),
    }
    return case, laid, conf, draw(st.integers(0, SEGMENT - 1))


def _write_store(root: Path, laid: list[tuple[bytes, str]]) -> None:
    commitlog = root / "commitlog"
    if commitlog.exists():
        shutil.rmtree(commitlog)
    commitlog.mkdir(parents=True)
    for i, (window, tail) in enumerate(laid):
        seg = bytearray(SEGMENT)
        seg[:len(window)] = window
        end = len(window)
        if tail == "blank" and SEGMENT - end >= 8:
            seg[end:end + 4] = (SEGMENT - end).to_bytes(4, "big")
            seg[end + 4:end + 8] = (0xCBD43194).to_bytes(4, "big")
        (commitlog / f"{i * SEGMENT:020d}").write_bytes(bytes(seg))


@pytest.fixture(scope="module")
def scratch():
    with tempfile.TemporaryDirectory(prefix="fuzz-decoder-") as d:
        yield Path(d)


# CI (no FUZZ_EXAMPLES): the same examples on every run; a long run explores at random
@settings(max_examples=EXAMPLES, deadline=None, derandomize="FUZZ_EXAMPLES" not in os.environ,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stores())
def test_mutated_golden_records_raise_nothing_but_store_errors(scratch, example):
    case, laid, conf, resync_from = example
    _write_store(scratch, laid)
    config = load_broker_config("\n".join(f"{k}={v}" for k, v in conf.items()))
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    try:
        store = open_store(str(scratch), config)
        try:
            built = rebuild_in_memory(store, config)
            event(f"records read: {'0' if not built.records else '1-9' if built.records < 10 else '10+'}")
        except StoreError:
            event("StoreError")
        seg = store.segments[0]
        with store.reader(seg) as read:
            try:
                start = cl.resync(read, seg.base, resync_from, seg.size, seg.size)
                if start >= 0:
                    res = cl.walk_range(read, seg.base, seg.size, cl.WalkState.at_slice_start(start, seg.size),
                                        seg.size + 1, config)
                    fix = getattr(dispatch, "fix_malformed_text", None)
                    if fix is not None:   # what a scan task does before decoding the details
                        fix(res)
                    detail_columns(res, with_body=True)
                    assert np.all(res.rec[:, cl.R_POS] >= start)
            except StoreError:
                pass
    finally:
        faulthandler.cancel_dump_traceback_later()
