"""Topic "" queue 0 reached by both blanks' empty requests and multi-dispatch requests naming an empty queue
(:func:`store_format.topic_empty_mix.merged_queue_zero_files`): the units each put lands, worked out by hand from
``ConsumeQueue.putMessagePositionInfo`` (5.5.1, 5.3.3), over the files a store holds there (``--as-restart``), and
the ``--as-restart`` refusals (:func:`pipelines.restart_topic_empty.write_topic_empty`).  The broker cases:
tests/test_topic_empty_mix_broker.py, tests/test_topic_empty_mix_restart_broker.py."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.fs as pafs
import pytest

from pipelines.build import write_file
from store_format.config import BrokerConfig
from store_format.errors import UnsupportedConfigError
from store_format.topic_empty_mix import merged_queue_zero_files

CQ_SIZE = 120   # six units a file
BLANK = (0, 0x7FFFFFFF, 0)


def _config(ext: bool = False) -> BrokerConfig:
    more = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "192"} if ext else {}
    return BrokerConfig.from_properties({"brokerVersion": "5", "mappedFileSizeConsumeQueue": str(CQ_SIZE), **more})


def _light(offsets: list[int], asks: list[int]) -> tuple[np.ndarray, ...]:
    """Empty-name units of 10 bytes each, tagsCode its number + 1, naming the queue offsets ``asks``."""
    n = len(offsets)
    return (np.array(offsets), np.full(n, 10), np.arange(1, n + 1), np.array(asks))


def _files(tmp: Path, merged: tuple[list[tuple[str, list]], list]) -> dict[str, list[tuple[int, int, int]]]:
    """Each file's units as :func:`pipelines.build.write_file` writes it."""
    out = {}
    for rel, pieces in merged[0]:
        write_file(str(tmp), rel, pieces)
        data = (tmp / rel).read_bytes()
        out[rel] = [(int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big", signed=True),
                     int.from_bytes(data[i + 12:i + 20], "big", signed=True)) for i in range(0, len(data), 20)] \
            if rel.startswith("consumequeue/") else data
    return out


def test_the_empty_request_first_takes_slot_zero_and_the_others_follow(tmp_path: Path) -> None:
    """Its unit at 0; then a unit naming 0 appended at 20, one naming 4 at 40 (past the write position: appended),
    one naming 2 skipped (below it), one naming 3 at 60; the second empty request skipped (its end, 0, not past 0)."""
    got = _files(tmp_path, merged_queue_zero_files(_config(), _light([100, 200, 300, 400], [0, 4, 2, 3]), 50, 2))
    assert got == {f"consumequeue/0/{0:020d}": [(0, 0, 0), (100, 10, 1), (200, 10, 2), (400, 10, 4), (0, 0, 0),
                                                 (0, 0, 0)]}


def test_an_empty_name_unit_first_fills_blanks_and_skips_the_empty_request(tmp_path: Path) -> None:
    """The first unit names 2: two ``fillPreBlank`` units, it at 40; the empty request (after it) is skipped; the
    next names 3 (at 60), the last 1 (skipped)."""
    got = _files(tmp_path, merged_queue_zero_files(_config(), _light([100, 200, 300], [2, 3, 1]), 150, 1))
    assert got == {f"consumequeue/0/{0:020d}": [BLANK, BLANK, (100, 10, 1), (200, 10, 2), (0, 0, 0), (0, 0, 0)]}


def test_ext_units_are_every_empty_request_s_and_the_first_unit_holds_its_address(tmp_path: Path) -> None:
    """With ext files: the empty request's unit's tagsCode is its ext unit's address (``Long.MIN_VALUE`` + 0), and
    ``consumequeue_ext/0/`` holds one ext unit per request, put or skipped (here two, the second's unit skipped; the
    empty-name units none); an empty request after the empty-name units leaves no unit but its ext unit."""
    first = _files(tmp_path / "a", merged_queue_zero_files(_config(True), _light([100], [0]), 50, 2))
    last = _files(tmp_path / "b", merged_queue_zero_files(_config(True), _light([100], [0]), 150, 2))
    assert first[f"consumequeue/0/{0:020d}"][:3] == [(0, 0, -(1 << 63)), (100, 10, 1), (0, 0, 0)]
    assert last[f"consumequeue/0/{0:020d}"][:2] == [(100, 10, 1), (0, 0, 0)]
    ext = [rel for rel in first if rel.startswith("consumequeue_ext/0/")]
    assert ext == [rel for rel in last if rel.startswith("consumequeue_ext/0/")] and len(ext) == 1
    assert first[ext[0]] == last[ext[0]] and first[ext[0]][:20] != bytes(20)


def test_a_full_file_is_followed_by_the_next(tmp_path: Path) -> None:
    """The empty request's unit and five units naming 0 fill the first file; the sixth goes at 120, the next file."""
    got = _files(tmp_path, merged_queue_zero_files(_config(), _light([100 * k for k in range(1, 7)], [0] * 6), 50, 1))
    assert sorted(got) == [f"consumequeue/0/{0:020d}", f"consumequeue/0/{CQ_SIZE:020d}"]
    assert got[f"consumequeue/0/{CQ_SIZE:020d}"][0] == (600, 10, 6)


def test_each_file_s_figures_are_the_empty_name_units_put_there() -> None:
    """The rows' figures from the put positions: the file that starts with the empty request's unit (0, 0) counts
    the three empty-name units put after it (the one skipped not), first 100, last 400; a full first file (the empty
    request's unit and five) then one unit in the next; an empty-name unit first: the units put, blanks not."""
    _, after = merged_queue_zero_files(_config(), _light([100, 200, 300, 400], [0, 4, 2, 3]), 50, 2)
    assert after == [(0, 3, 100, 400)]
    _, full = merged_queue_zero_files(_config(), _light([100 * k for k in range(1, 7)], [0] * 6), 50, 1)
    assert full == [(0, 5, 100, 500), (CQ_SIZE, 1, 600, 600)]
    _, before = merged_queue_zero_files(_config(), _light([100, 200, 300], [2, 3, 1]), 150, 1)
    assert before == [(0, 2, 100, 200)]


def test_as_restart_over_the_mix_is_refused_in_one_line_where_no_broker_showed_it(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """``--as-restart`` where both reach topic "" queue 0, refused in one line where not checked against a broker:
    on 5.3.3 (the 5.5.1 broker's restart is checked: tests/test_topic_empty_mix_restart_broker.py), and at a DLedger
    start, its reput set inside an entry dispatching blanks or not (on 5.5.1 too)."""
    import pipelines.restart_topic_empty as rte
    from pipelines.build_stage import Built
    from store_format.concurrent_reput import ConcurrentStop
    from store_format.store import StoreLocation

    st = StoreLocation(str(tmp_path), pafs.LocalFileSystem(), str(tmp_path), [])
    stop = ConcurrentStop(offset=300, why="", finding={}, empty_request=150, empty_requests=1)
    mix = rte.QueueZeroMix(None, 150, 1)  # type: ignore[arg-type]
    v55 = BrokerConfig.from_properties({"brokerVersion": "5.5", "mappedFileSizeConsumeQueue": str(CQ_SIZE)})
    restart = rte.Restart(None)  # type: ignore[arg-type]
    for config, stops, inside, recovery, what in ((_config(), [stop], 0, restart, "other than 5.5.1"),
                                                  (v55, [], 1, None, "inside an entry"),
                                                  (v55, [stop], 0, None, "DLedger start")):
        monkeypatch.setattr(rte, "inside_blanks", lambda recovery, n=inside: n)
        built = Built([{"topic": "", "queue_id": 0, "file_start": 0}], [], 1, 1, [])
        with pytest.raises(UnsupportedConfigError) as e:
            rte.write_topic_empty(st, config, None, built, recovery, stops, mix if stops else None,  # type: ignore
                                  as_restart=True)
        assert "\n" not in str(e.value) and "--as-restart" in str(e.value) and "consumequeue/0/" in str(e.value)
        assert what in str(e.value), str(e.value)


def test_over_the_files_the_store_holds(tmp_path: Path) -> None:
    """``store`` (``--as-restart``): each file the puts open gets the bytes they write (through their last unit, the
    empty request's unit of zeros too) over the store's, a shorter one grown with zeros to the file size; a file
    they do not open is kept as it is; with ext files the first ext file too (its first unit, the request's ext unit,
    written over it), the next kept."""
    from store_format.store import StoreLocation

    store = tmp_path / "store"
    held = {f"consumequeue/0/{0:020d}": bytes(range(1, 81)), f"consumequeue/0/{CQ_SIZE:020d}": b"\x07" * 30,
            f"consumequeue_ext/0/{0:020d}": b"\x05" * 192, f"consumequeue_ext/0/{192:020d}": b"\x06" * 8}
    for rel, data in held.items():
        (store / rel).parent.mkdir(parents=True, exist_ok=True)
        (store / rel).write_bytes(data)
    st = StoreLocation(str(store), pafs.LocalFileSystem(), str(store), [])
    light = _light([100, 200], [0, 4])
    got = _files(tmp_path / "a", merged_queue_zero_files(_config(True), light, 50, 1, st))
    fresh = _files(tmp_path / "b", merged_queue_zero_files(_config(True), light, 50, 1))
    first = f"consumequeue/0/{0:020d}"
    assert fresh[first][:3] == [(0, 0, -(1 << 63)), (100, 10, 1), (200, 10, 2)] and not any(map(any, fresh[first][3:]))
    raw = (tmp_path / "a" / first).read_bytes()   # three units written: 60 bytes, then the held ones, then zeros
    assert raw == (tmp_path / "b" / first).read_bytes()[:60] + held[first][60:] + bytes(CQ_SIZE - 80)
    second = f"consumequeue/0/{CQ_SIZE:020d}"
    assert (tmp_path / "a" / second).read_bytes() == held[second]
    ext = f"consumequeue_ext/0/{0:020d}"
    assert got[ext] == fresh[ext][:20] + held[ext][20:] and got[f"consumequeue_ext/0/{192:020d}"] == b"\x06" * 8
    assert sorted(got) == sorted(held)



def test_the_build_starts_queue_zero_after_the_empty_request_only_where_it_comes_first() -> None:
    """:func:`store_format.topic_empty_mix.empty_first_state` (the build's seed of that queue, so that the messages
    table places the empty-name units where the files hold them): after the empty request's unit, max physical offset
    0 and write position 20 in file 0; none where an empty-name unit comes first, or no empty request."""
    from store_format.consumequeue import Q_FIRST_FILE, Q_MAX_PHYS, Q_WRITE_POS
    from store_format.topic_empty_mix import empty_first_state

    state = empty_first_state(_config(), np.array([100, 200]), 50, 1)
    assert state is not None and (state[Q_MAX_PHYS], state[Q_WRITE_POS], state[Q_FIRST_FILE]) == (0, 20, 0)
    assert empty_first_state(_config(), np.array([100, 200]), 150, 3) is None
    assert empty_first_state(_config(), np.array([100]), 50, 0) is None


def test_the_mix_reads_queue_zero_s_units_once_and_only_when_asked(monkeypatch) -> None:
    """:class:`pipelines.restart_topic_empty.QueueZeroMix`: none without an empty request (``--as-restart`` too);
    its empty-name units read from the work files the first time the seed or the merge asks, not again."""
    import pipelines.restart_topic_empty as rte
    from store_format.concurrent_reput import ConcurrentStop

    reads = []
    monkeypatch.setattr(rte, "_queue_units", lambda walk, queue: reads.append(queue) or _light([100, 200], [0, 1]))
    stops = [ConcurrentStop(offset=300, why="", finding={}, empty_request=150, empty_requests=2),
             ConcurrentStop(offset=900, why="", finding={}, empty_request=50, empty_requests=1)]
    assert rte.queue_zero_mix(stops[:0], None) is None   # type: ignore[arg-type]
    mix = rte.queue_zero_mix(stops, None)   # type: ignore[arg-type]
    assert mix is not None and (mix.first_empty_at, mix.requests) == (50, 3) and reads == []
    seed = rte.queue_zero_seeds(_config(), mix)
    assert seed is not None and list(seed) == [("", 0)]
    assert len(mix.light[0]) == 2 and reads == [("", 0)]
