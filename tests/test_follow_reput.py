"""``store_format.reput.follow_reput``: the segment-to-segment rules of
``DefaultMessageStore.ReputMessageService.doReput`` (where the next slice starts, when the reput stops,
the 5.x reput end), which the sequential reference and the Spark job's chain both follow.

Each rule is checked twice: with walk outcomes sent by hand (the rule alone), and on tiny stores
written by ``CommitLogWriter`` and walked by the kernel (the rule as a store exercises it)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from store_format import commitlog as cl
from store_format.config import BrokerConfig
from store_format.corruption import set_magic_code, set_total_size
from store_format.reput import follow_reput, walk_store
from store_format.store import Segment, StoreLocation, open_store
from store_format.writer import CommitLogWriter

FILE = 4096
FIRST = 2 * FILE   # a rebased store: the reput starts at the first segment's base, not at 0

Walk = Callable[[Segment, cl.WalkState, "int | None"], "tuple[cl.WalkState, int]"]
Slice = tuple[int, int, "int | None"]   # segment index, entering position, 5.x reput end (relative)


def _write(root: Path, config: BrokerConfig, messages: int = 60) -> list[int]:
    """Three segments of ~20 records each (200 bytes), then zeros; returns the record offsets."""
    with CommitLogWriter(root, config, start_offset=FIRST) as w:
        return [w.append("T", i % 2, b"x" * 100, {"KEYS": f"k{i}"}, store_timestamp=1000 + i)[0]
                for i in range(messages)]


def _config(version: str = "4", broker_id: int = 0) -> BrokerConfig:
    return BrokerConfig(mappedFileSizeCommitLog=FILE, brokerVersion=version, brokerId=broker_id)


def _follow(store: StoreLocation, config: BrokerConfig, walk: Walk,
            reput_end: Callable[[], int | None] | None = None) -> list[Slice]:
    """Drive :func:`follow_reput` with ``walk`` as the caller's walk of each slice; the slices it handed out."""
    seen: list[Slice] = []
    steps = follow_reput(store, config, reput_end)
    try:
        seg, state, limit_rel = next(steps)
        while True:
            assert state == cl.WalkState.at_slice_start(state.bufpos, seg.data_end)
            seen.append((seg.index, state.bufpos, limit_rel))
            seg, state, limit_rel = steps.send(walk(seg, state, limit_rel))
    except StopIteration:
        pass
    return seen


def _kernel(store: StoreLocation, config: BrokerConfig, stops: list[tuple[int, int, int]] | None = None) -> Walk:
    """The real walk of a slice (``walk_range``); records ``(segment, end position, stop)`` in ``stops``."""
    def walk(seg: Segment, state: cl.WalkState, limit_rel: int | None) -> tuple[cl.WalkState, int]:
        with store.reader(seg) as read:
            res = cl.walk_range(read, seg.base, seg.data_end, state, seg.data_end + 1, config, limit_rel=limit_rel)
        if stops is not None:
            stops.append((seg.index, res.state.bufpos, res.stop))
        return res.state, res.stop
    return walk


def _scripted(*outcomes: Callable[[cl.WalkState], tuple[cl.WalkState, int]]) -> Walk:
    """A walk that ends its n-th slice as ``outcomes[n]`` says (given the entering state)."""
    it = iter(outcomes)
    return lambda seg, state, limit_rel: next(it)(state)


def _to(bufpos: int, stop: int, reput: int | None = None) -> Callable[[cl.WalkState], tuple[cl.WalkState, int]]:
    """The slice's walk stopped at ``bufpos`` (declared-size position ``reput``) for ``stop``."""
    def end(state: cl.WalkState) -> tuple[cl.WalkState, int]:
        r = bufpos if reput is None else reput
        return cl.WalkState(bufpos, r, r - state.reput, state.slice_size), stop
    return end


@pytest.fixture
def store4(tmp_path: Path) -> tuple[StoreLocation, BrokerConfig, list[int]]:
    config = _config()
    offsets = _write(tmp_path, config)
    return open_store(str(tmp_path), config), config, offsets


# --- blank records: CommitLog.rollNextFile

def test_a_clean_store_is_read_segment_after_segment_from_the_first_base(store4) -> None:
    store, config, _ = store4
    stops: list[tuple[int, int, int]] = []
    slices = _follow(store, config, _kernel(store, config, stops))
    assert [s.base for s in store.segments] == [FIRST, FIRST + FILE, FIRST + 2 * FILE]
    assert slices == [(0, 0, None), (1, 0, None), (2, 0, None)]
    assert [s[2] for s in stops] == [cl.Stop.BLANK, cl.Stop.BLANK, cl.Stop.BAD]   # the last one: zeros
    # the sequential reference walks the same slices
    assert [(seg.index, res.stop) for seg, res in walk_store(store, config)] == [(s[0], s[2]) for s in stops]


def test_a_blank_record_rolls_to_the_segment_after_the_declared_position(store4) -> None:
    store, config, _ = store4
    # declared sizes ended inside the segment: the next one
    assert _follow(store, config, _scripted(_to(3990, cl.Stop.BLANK), _to(4000, cl.Stop.BLANK),
                                            _to(4000, cl.Stop.LIMIT))) == [(0, 0, None), (1, 0, None), (2, 0, None)]
    # declared sizes (a size mismatch) ran past the segment's end: rollNextFile skips a segment
    assert _follow(store, config, _scripted(_to(3990, cl.Stop.BLANK, reput=FILE + 10),
                                            _to(4000, cl.Stop.LIMIT))) == [(0, 0, None), (2, 0, None)]


def test_a_size_mismatch_before_the_blank_record_skips_a_segment(tmp_path: Path) -> None:
    config = _config()
    offsets = _write(tmp_path, config)
    last_of_first = max(o for o in offsets if o < FIRST + FILE)
    blank_size = FIRST + FILE - (last_of_first + 200)
    set_total_size(tmp_path, last_of_first, delta=blank_size + 8)   # reputFromOffset now ends past the segment
    store = open_store(str(tmp_path), config)
    stops: list[tuple[int, int, int]] = []
    assert _follow(store, config, _kernel(store, config, stops)) == [(0, 0, None), (2, 0, None)]
    assert stops[0] == (0, last_of_first + 200 - FIRST, cl.Stop.BLANK)
    assert [seg.index for seg, _ in walk_store(store, config)] == [0, 2]


# --- unreadable records: a master skips the rest of the slice, a slave waits

def test_an_unreadable_record_on_a_master_skips_the_rest_of_the_slice(tmp_path: Path) -> None:
    config = _config()
    offsets = _write(tmp_path, config)
    set_magic_code(tmp_path, offsets[5])
    store = open_store(str(tmp_path), config)
    stops: list[tuple[int, int, int]] = []
    assert _follow(store, config, _kernel(store, config, stops)) == [(0, 0, None), (1, 0, None), (2, 0, None)]
    assert stops[0] == (0, offsets[5] - FIRST, cl.Stop.BAD)
    # reputFromOffset += sliceSize - readSize: the end of the slice, wherever the bad record was
    assert _follow(store, config, _scripted(_to(1000, cl.Stop.BAD), _to(1000, cl.Stop.LIMIT))) == \
        [(0, 0, None), (1, 0, None)]


def test_an_unreadable_record_on_a_slave_stops_the_reput(tmp_path: Path) -> None:
    config = _config(broker_id=1)
    offsets = _write(tmp_path, config)
    set_magic_code(tmp_path, offsets[25])   # in the second segment
    store = open_store(str(tmp_path), config)
    stops: list[tuple[int, int, int]] = []
    assert _follow(store, config, _kernel(store, config, stops)) == [(0, 0, None), (1, 0, None)]
    assert stops[-1] == (1, offsets[25] - FIRST - FILE, cl.Stop.BAD)
    assert [seg.index for seg, _ in walk_store(store, config)] == [0, 1]


def test_the_reput_waits_at_the_end_of_readable_data(store4) -> None:
    store, config, _ = store4
    # a recovery left the first segment's write position at 2000: the master's skip lands there, where
    # getData has nothing to hand out (the reput waits), although later segments exist
    store.segments[0] = dataclasses.replace(store.segments[0], readable=2000)
    assert _follow(store, config, _scripted(_to(1000, cl.Stop.BAD))) == [(0, 0, None)]
    # a slice read to its end goes on from reputFromOffset: there too
    assert _follow(store, config, _scripted(_to(2000, cl.Stop.SLICE_END))) == [(0, 0, None)]


def test_a_slice_read_to_its_end_goes_on_from_the_reput_offset(store4) -> None:
    store, config, _ = store4
    # a slice that ended mid-segment (SLICE_END at a declared position) opens a slice there
    assert _follow(store, config, _scripted(_to(1000, cl.Stop.SLICE_END), _to(4000, cl.Stop.BLANK),
                                            _to(0, cl.Stop.LIMIT, reput=0))) == \
        [(0, 0, None), (0, 1000, None), (1, 0, None)]


def test_the_reput_ends_where_it_does_not_advance_or_is_told_to(store4) -> None:
    store, config, _ = store4
    assert _follow(store, config, _scripted(_to(0, cl.Stop.SLICE_END))) == [(0, 0, None)]      # no progress
    assert _follow(store, config, _scripted(_to(1000, cl.Stop.LIMIT))) == [(0, 0, None)]       # 5.x reput end
    with pytest.raises(ValueError, match="split_end"):   # a walk must not hand back a split's end
        _follow(store, config, _scripted(_to(1000, cl.Stop.SPLIT_END)))


# --- the 5.x reput end (getReputEndOffset): asked once, on the last segment

def test_the_reput_end_is_asked_once_when_the_reput_reaches_the_last_segment(tmp_path: Path) -> None:
    config = _config("5")
    _write(tmp_path, config)
    store = open_store(str(tmp_path), config)
    last = store.segments[-1]
    asked: list[int] = []
    walk = _kernel(store, config)

    def counting_walk(seg: Segment, state: cl.WalkState, limit_rel: int | None) -> tuple[cl.WalkState, int]:
        asked.append(-1)   # marks each slice walked, to see when the reput end was asked
        return walk(seg, state, limit_rel)

    def reput_end() -> int:
        asked.append(len(store.segments) - 1)
        return last.base + 1234

    slices = _follow(store, config, counting_walk, reput_end)
    assert slices == [(0, 0, None), (1, 0, None), (2, 0, 1234)]   # relative, and on the last segment only
    assert asked == [-1, -1, 2, -1]                             # once, after two slices, before the last
    assert _follow(store, config, counting_walk, None)[-1] == (2, 0, None)


def test_the_reput_end_is_not_asked_when_the_reput_stops_before_the_last_segment(tmp_path: Path) -> None:
    config = _config("5", broker_id=1)
    offsets = _write(tmp_path, config)
    set_magic_code(tmp_path, offsets[3])
    store = open_store(str(tmp_path), config)

    def reput_end() -> int:
        raise AssertionError("asked for the reput end without reaching the last segment")

    assert _follow(store, config, _kernel(store, config), reput_end) == [(0, 0, None)]
