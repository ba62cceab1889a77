"""verify's ext units orphaned of a queue the 5.5.1 cut left with no file (max -1, ``QueueCut.reset``) that the
start's reput, set at 2147483647 inside an entry, writes anew from a message it parsed there before it goes on before
the walk's data file: of the parsed own units and the walk's records again, those ``putMessagePositionInfo`` appends
from the empty queue each point at the ext unit put for it (:func:`store_format.dledger_crash_before.ext_anew`,
``ExtAgain.anew``, :func:`pipelines.verify.ext_reput.ext_reput_puts`).  Each expected count below is worked out by
hand from ``ConsumeQueue.putMessagePositionInfo`` (5.5.1): a unit at or below the max dropped; one whose queue offset
is not 0 and whose position (queue offset * 20) lies below the write position dropped; any other appended at the write
position, the first opening a file at its queue offset (``fillPreBlank`` before it).  The broker case:
``-past-2gib-before-no-file-ext`` (tests/test_verify_ext_orphans_2gib_broker.py, ``DLEDGER_2GIB=1``)."""
from __future__ import annotations

import dataclasses
import types

import numpy as np
from test_verify_ext_orphans_broker import _crash

from pipelines.verify.ext_reput import ext_reput_puts
from store_format.dledger_crash_before import ext_anew
from store_format.dledger_crash_cut import ExtAgain
from store_format.dledger_queue_track import KIND_CQ, KIND_LIGHT, U_END, U_KEY, U_KIND, U_OFFSET, U_QUEUE

PARSED_AT = 2147483647
CQ_SIZE = 20 * 1000


def _rows(*units: tuple[int, int], queue: int = 0, kind: int = KIND_CQ) -> np.ndarray:
    """Unit rows (``UNIT_COLUMNS``) of ``(commitlog offset, queue offset)`` pairs, 100-byte records."""
    out = np.zeros((len(units), 5), np.int64)
    for k, (off, qo) in enumerate(units):
        out[k, [U_OFFSET, U_END, U_QUEUE, U_KEY, U_KIND]] = (off, off + 100, queue, qo, kind)
    return out


def _walk(rows: np.ndarray, seen_before: bool = False) -> types.SimpleNamespace:
    return types.SimpleNamespace(ids={("T7", 0): 0}, seen_before={0} if seen_before else set(),
                                 last_file=lambda: rows)


def _parsed(*queue_offsets: int) -> tuple[types.SimpleNamespace, ...]:
    return tuple(types.SimpleNamespace(topic="T7", queue_id=0, own=True, batch=False, offset=PARSED_AT + 200 * k,
                                       size=100, queue_offset=qo) for k, qo in enumerate(queue_offsets))


def _anew(parsed: tuple, earlier: np.ndarray | None, walked: np.ndarray, seen_before: bool = False) -> int:
    n_earlier = 0 if earlier is None else int((earlier[:, U_KIND] == KIND_CQ).sum())
    again = ExtAgain("T7", 0, before=2, count=n_earlier + int((walked[:, U_KIND] == KIND_CQ).sum()),
                     positions=np.zeros(0, np.int64), ordinals=np.zeros(0, np.int64), skip=len(parsed))
    return ext_anew(again, parsed, earlier, _walk(walked, seen_before), 9_000_000_000, CQ_SIZE).anew  # type: ignore


def test_the_parsed_unit_and_the_walks_units_the_rewrite_from_empty_appends():
    # the broker's case: parsed at queue offset 3 (a new file, fillPreBlank 0..2, at 60, write position 80), then
    # the walk's record of queue offset 0 (no order check): appended at 80, both pointing at their ext units
    assert _anew(_parsed(3), None, _rows((3_000_000_000, 0))) == 2
    # a walk record of queue offset 1 after them: 20 below the write position 100, dropped (its ext unit orphaned)
    assert _anew(_parsed(3), None, _rows((3_000_000_000, 0), (3_000_000_100, 1))) == 2
    # queue offset 5 there instead: 100, the write position, appended
    assert _anew(_parsed(3), None, _rows((3_000_000_000, 0), (3_000_000_100, 5))) == 3
    # two parsed, the second's queue offset 1 below the first's write position: dropped
    assert _anew(_parsed(3, 1), None, _rows((3_000_000_000, 0))) == 2
    # a light unit of the walk's in the queue: no ext unit, not counted
    light = np.concatenate([_rows((3_000_000_000, 0)), _rows((3_000_000_100, 7), kind=KIND_LIGHT)])
    assert _anew(_parsed(3), None, light) == 2


def test_the_earlier_files_records_move_the_write_position_but_are_left_out_of_the_count():
    # parsed at 3 (write position 80), an earlier record of queue offset 0 appended at 80 (100; not counted: the
    # rebuild's own units below the cut), the walk's of queue offset 4 (80 < 100) dropped, of 5 appended
    earlier = _rows((2_200_000_000, 0))
    assert _anew(_parsed(3), earlier, _rows((3_000_000_000, 4))) == 1
    assert _anew(_parsed(3), earlier, _rows((3_000_000_000, 5))) == 2


def test_not_modelled_when_the_rows_do_not_match_the_plans_counts():
    # the walk's records of the queue not all in its last data file, or rows other than the plan counted
    assert _anew(_parsed(3), None, _rows((3_000_000_000, 0)), seen_before=True) == -1
    again = ExtAgain("T7", 0, before=2, count=2, positions=np.zeros(0, np.int64), ordinals=np.zeros(0, np.int64),
                     skip=1)
    assert ext_anew(again, _parsed(3), None, _walk(_rows((3_000_000_000, 0))), 9_000_000_000,  # type: ignore
                    CQ_SIZE).anew == -1


def test_verify_counts_the_rewrites_appended_units_or_says_the_figure_is_not_predicted():
    reset = (("T0", 0),)
    crash = _crash(before=True, reset=reset, inside_from=PARSED_AT)
    a = crash.ext_again[0]
    # the rewrite's count, not the cut's put-backs (two positions here)
    crash.ext_again = (dataclasses.replace(ExtAgain("T0", 0, 2, 1, a.positions, np.zeros(2, np.int64)), anew=3),)
    assert ext_reput_puts(crash, 5000) == ({"T0/0": 3}, {})  # type: ignore[arg-type]
    crash.ext_again = (ExtAgain("T0", 0, 2, 1, a.positions, np.zeros(2, np.int64)),)   # anew -1: not modelled
    back, why = ext_reput_puts(crash, 5000)  # type: ignore[arg-type]
    assert back == {} and why["T0/0"].startswith("the cut left it no file (max -1)") and "\n" not in why["T0/0"]
    # not set inside an entry (ext_before_walk's _reset_positions place its units), or not before the walk: the
    # plan's put-backs, as before
    assert ext_reput_puts(_crash(before=True, reset=reset), 5000) == ({"T0/0": 2}, {})  # type: ignore[arg-type]
    assert ext_reput_puts(_crash(reset=reset, inside_from=PARSED_AT), 5000) == ({"T0/0": 2}, {})  # type: ignore
