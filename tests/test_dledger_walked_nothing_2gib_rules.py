"""Unit checks of which reputs set at 2147483647 after a DLedger crash walk that dispatched nothing
:func:`store_format.dledger_walked_nothing._parsed_refusal` models and where
:func:`store_format.dledger_walked_nothing._placed_on_disk` puts their units (the broker cases:
``tests/test_dledger_walked_nothing_2gib_broker.py``, ``tests/test_dledger_walked_nothing_2gib_more_broker.py``,
``tests/test_dledger_walked_nothing_2gib_next_file_broker.py`` (the jump to the next data file's start) and,
a light queue's unit, ``tests/test_dledger_walked_nothing_2gib_parsed_broker.py`` (a new queue) and
``tests/test_dledger_walked_nothing_2gib_light_disk_broker.py`` (a queue a file of which the cut leaves),
``tests/test_dledger_walked_nothing_2gib_light_emptied_broker.py`` (a queue the cut empties),
``tests/test_dledger_walked_nothing_2gib_light_ext_broker.py`` (both with ext files) and, on 5.3.3, an own unit's
queue the cut empties and a light queue's, ``tests/test_dledger_walked_nothing_2gib_533_broker.py``; a message for a
new batch queue or a batch queue on disk, ``tests/test_dledger_walked_nothing_2gib_batch_broker.py``;
``DLEDGER_2GIB=1``)."""
from __future__ import annotations

import pytest

from store_format.config import BrokerConfig
from store_format.dledger_crash_cut import QueuesOnDisk
from store_format.dledger_inside_state import ParsedUnit
from store_format.dledger_walked_nothing import _parsed_refusal, _placed_on_disk, reput_after_cut
from store_format.errors import UnsupportedConfigError
from store_format.filedump.checkpoint import Checkpoint

BLANK_MAX = 2**31 - 1
PROCESS, COMMITTED, END = 2_100_000_000, 2_147_484_059, 2_147_484_300
T5 = ParsedUnit("T5", 0, BLANK_MAX, 111, 0, 0, own=True, batch=False)
LIGHT_KEY = ("%LMQ%q1", 0)
LIGHT = ParsedUnit(*LIGHT_KEY, BLANK_MAX, 111, 2, 0, own=False, batch=False)   # T5's message's light unit
BATCH = ParsedUnit("BT0", 0, BLANK_MAX, 111, 7, 0, own=True, batch=True, store_time=1, base=7, batch_size=3)


T0_KEPT = {("T0", 0): (PROCESS - 500, True, 9_912_420, False)}   # T0 as the cut left it: max, a file stays, write
LIGHT_KEPT = {LIGHT_KEY: (241, True, 20, False)}   # %LMQ%q1 as the cut left it: its first unit (48, 193) only
LIGHT_EMPTIED = {LIGHT_KEY: (PROCESS, False, -1, False)}   # %LMQ%q1 whose only file the cut deleted


FILE_END, NEXT_END = 2_200_000_000, 2_200_085_230   # the data file holding 2147483647 ends; a log past it ends


def _why(goes_on: int, *, committed: int = COMMITTED, reput: int = BLANK_MAX, end: int = END,
         parsed: bool = False) -> str:
    return _parsed_refusal(goes_on, reput=reput, process_offset=PROCESS, confirm_offset=committed, log_end=end,
                           file_end=FILE_END, parsed=parsed)


@pytest.mark.parametrize("goes_on,committed,end", [
    (END, END, END), (COMMITTED, COMMITTED, END),
    (FILE_END, NEXT_END, NEXT_END), (FILE_END, NEXT_END - 241, NEXT_END),   # the next data file, committed past it
], ids=["log-end", "committed", "next-file", "next-file-committed"])
def test_a_jump_to_the_log_end_the_committed_position_or_the_next_data_file_is_modelled(goes_on: int, committed: int,
                                                                                      end: int) -> None:
    """The broker cases: tests/test_dledger_walked_nothing_2gib_broker.py (log's end, committed position) and
    tests/test_dledger_walked_nothing_2gib_next_file_broker.py (the data file's end, the next one's start)."""
    assert _why(goes_on, committed=committed, end=end) == ""


@pytest.mark.parametrize("goes_on,committed,end", [
    (BLANK_MAX + 412, NEXT_END, NEXT_END),            # an entry's start in the data file, committed past its end
    (COMMITTED - 100, COMMITTED, END),                # an entry's start before the committed position
], ids=["next-file-layout", "committed-past"])
def test_an_entry_start_after_parsed_messages_is_modelled(goes_on: int, committed: int, end: int) -> None:
    """The broker cases tests/test_dledger_walked_nothing_2gib_in_file_broker.py (-to-entry, -to-entry-t0-past: the
    reput walks the entries on from there); with no parsed message the check cannot meet an entry's start there."""
    assert _why(goes_on, committed=committed, end=end, parsed=True) == ""
    assert "modelled: at the log's end" in _why(goes_on, committed=committed, end=end)


def test_an_entry_start_past_the_data_files_end_or_the_committed_position_stays_refused() -> None:
    assert "modelled: at the log's end" in _why(FILE_END + 4237, committed=NEXT_END, end=NEXT_END, parsed=True)
    assert "modelled: at the log's end" in _why(COMMITTED + 100, committed=COMMITTED, end=END, parsed=True)


def test_a_held_queues_unit_ending_past_an_entry_start_drops_to_its_end() -> None:
    """-to-entry-t0-past: the parsed T0 unit ends past the entry the reput goes on at: T0's max then."""
    cut = {("T9", 0): (BLANK_MAX, True, 20, False), **T0_KEPT}
    on_disk = QueuesOnDisk(NEXT_END - 249, lambda _offset, _walked: cut)
    conf = BrokerConfig(brokerVersion="5.5", recheckReputOffsetFromCq=True, mappedFileSizeCommitLog=100_000_000)
    unit = ParsedUnit("T0", 0, BLANK_MAX + 5000, 412, 600_000, 0, own=True, batch=False)
    reput, cut_ = reput_after_cut(on_disk, PROCESS, Checkpoint(logics_physical_offset=PROCESS + 50_000_000), conf,
                                  min_offset=0, confirm_offset=NEXT_END, log_end=NEXT_END, why="walked nothing",
                                  inside=lambda _pos: (BLANK_MAX + 412, ((BLANK_MAX, BLANK_MAX + 412),), (unit,)))
    assert reput == BLANK_MAX + 412 and cut_ is not None and cut_.drops_to == {("T0", 0): BLANK_MAX + 5412}


@pytest.mark.parametrize("queue_offset,size,at", [
    (506_827, 111, 9_912_420),    # queue offset * 20 past the write position: appended there ("order maybe wrong")
    (495_621, 111, 9_912_420),    # at the write position: appended
    (0, 111, 9_912_420),          # queue offset 0: no queue offset check, appended
    (1, 111, -1),                 # below the write position, not 0: dropped ("build consume queue repeatedly")
], ids=["past", "at", "zero", "below"])
def test_a_parsed_unit_of_a_held_queue_goes_by_put_message_position_info(queue_offset: int, size: int,
                                                                          at: int) -> None:
    unit = ParsedUnit("T0", 0, BLANK_MAX, size, queue_offset, 0, own=True, batch=False)
    (t0,) = _placed_on_disk((unit, T5), T0_KEPT, 6_000_000, BLANK_MAX).whole   # T5: the rebuild's own dispatch
    assert (t0.topic, t0.walk_end, t0.parsed_at) == ("T0", 9_912_420, (at,)), t0
    assert t0.units == (((at, BLANK_MAX, size, 0),) if at >= 0 else ()) and not t0.opened, t0


def test_a_parsed_unit_at_or_below_the_held_queues_max_is_dropped() -> None:
    held = {("T0", 0): (BLANK_MAX + 111, True, 9_912_420, False)}
    unit = ParsedUnit("T0", 0, BLANK_MAX, 111, 506_827, 0, own=True, batch=False)
    (t0,) = _placed_on_disk((unit,), held, 6_000_000, BLANK_MAX).whole
    assert t0.parsed_at == (-1,) and t0.units == (), t0


@pytest.mark.parametrize("kwargs,text", [
    ({"goes_on": FILE_END + 100_000_000, "committed": NEXT_END + 100_000_000, "end": NEXT_END + 100_000_000},
     "modelled: at the log's end"),   # another data file's end than the one it is set in
    ({"goes_on": COMMITTED - 100, "committed": COMMITTED}, "modelled: at the log's end"),   # an entry's start
    ({"goes_on": COMMITTED, "committed": END}, "modelled: at the log's end"),   # neither of the two
    ({"goes_on": END, "committed": END, "reput": PROCESS}, "set past processOffset"),
    ({"goes_on": END, "committed": END, "reput": PROCESS - 1}, "set past processOffset"),
], ids=["other-file-end", "entry-start", "neither", "at-process-offset", "before-process-offset"])
def test_the_rest_stays_refused(kwargs: dict, text: str) -> None:
    goes_on = kwargs.pop("goes_on")
    assert text in _why(goes_on, **kwargs)


@pytest.mark.parametrize("held,at,opened", [
    ((48, True, 46, False), 46, ()),                # a file left with one unit: appended at the write position
    ((2_147_483_647, True, 46, False), -1, ()),     # the max at the unit's start: dropped (start, not end)
    ((PROCESS - 1, False, -1, False), 0, (0,)),     # no file left: the first file at 0, whatever INNER_BASE
], ids=["held", "at-max", "emptied"])
def test_a_parsed_unit_of_a_batch_queue_on_disk_goes_by_put_batch_message_position_info(
        held: tuple, at: int, opened: tuple) -> None:
    """BatchConsumeQueue.putBatchMessagePositionInfo from the write position and max truncateDirtyLogicFiles left (the
    start of its last unit kept; none kept: processOffset - 1, write position 0), no queue offset check (broker cases
    -embedded-batch-held: at 46; -embedded-batch-emptied: a new file at 0, the unit there)."""
    (q,) = _placed_on_disk((BATCH,), {("BT0", 0): held}, 6_000_000, BLANK_MAX, bcq_file_size=4600).whole
    assert (q.topic, q.parsed_at, q.opened) == ("BT0", (at,), opened), q
    assert q.units == (((at, BLANK_MAX, 111, 0),) if at >= 0 else ()), q


def test_a_parsed_unit_of_a_new_batch_queue_is_the_rebuilds_own_dispatchs() -> None:
    assert not _placed_on_disk((BATCH, T5), T0_KEPT, 6_000_000, BLANK_MAX, bcq_file_size=4600).whole


@pytest.mark.parametrize("queue_offset,at", [(506_827, 9_912_420), (1, -1)], ids=["past", "below"])
def test_with_ext_files_a_held_queues_parsed_unit_puts_its_ext_unit_at_the_loaded_end(queue_offset: int,
                                                                                       at: int) -> None:
    """putMessagePositionInfoWrapper: ConsumeQueueExt.put first, after the ext files' end ConsumeQueue.recover left
    (the cut, a file staying, leaves them), appended or dropped; an appended unit holds the ext unit's address."""
    end = 20 * (495_621 + 11_207)
    unit = ParsedUnit("T0", 0, BLANK_MAX, 111, queue_offset, 0, own=True, batch=False)
    placed = _placed_on_disk((unit, T5), T0_KEPT, 6_000_000, BLANK_MAX, 48 * 1024 * 1024, {("T0", 0): end})
    (t0,) = placed.whole
    assert t0.parsed_at == (at,) and placed.ext_put == (("T0", 0, 1), ("T5", 0, 1)), placed
    assert t0.units == (((at, BLANK_MAX, 111, end - 2**63),) if at >= 0 else ()), t0


def test_with_ext_files_not_read_a_held_queues_parsed_unit_stays_refused() -> None:
    unit = ParsedUnit("T0", 0, BLANK_MAX, 111, 1, 0, own=True, batch=False)
    with pytest.raises(UnsupportedConfigError, match="ext files whose end"):
        _placed_on_disk((unit,), T0_KEPT, 6_000_000, BLANK_MAX, 48 * 1024 * 1024, {})


def test_a_queue_the_cut_left_no_file_of_gets_its_first_file_where_the_queue_offset_falls() -> None:
    """5.5.1: no file, max -1: getLastMappedFile creates the file holding queue byte 100, fillPreBlank units before
    the unit (putMessagePositionInfo, isFirstCreateInQueue)."""
    unit = ParsedUnit("T7", 0, BLANK_MAX, 111, 5, 0, own=True, batch=False)
    placed = _placed_on_disk((unit,), {("T7", 0): (PROCESS, False, -1, False)}, 6_000_000, BLANK_MAX)
    (q,) = placed.whole
    assert (q.opened, q.blank_until, q.parsed_at, q.units) == ((0,), 100, (100,), ((100, BLANK_MAX, 111, 0),)), q


def test_on_533_a_queue_the_cut_left_no_file_of_keeps_the_max_process_offset() -> None:
    """5.3.3: truncateDirtyLogicFiles sets the max to processOffset, correctMinOffset with no file leaves it (broker
    case 5.3.3-...-embedded-t7-emptied): modelled; a unit ending past it gets the first file where its queue offset
    falls, as on 5.5.1; one ending at or below it is dropped (putMessagePositionInfo's max check), which -1 keeps."""
    emptied = {("T7", 0): (PROCESS, False, -1, False)}
    unit = ParsedUnit("T7", 0, BLANK_MAX, 111, 5, 0, own=True, batch=False)
    (q,) = _placed_on_disk((unit,), emptied, 6_000_000, BLANK_MAX, emptied_max=PROCESS).whole
    assert (q.opened, q.blank_until, q.parsed_at, q.units) == ((0,), 100, (100,), ((100, BLANK_MAX, 111, 0),)), q
    below = ParsedUnit("T7", 0, PROCESS - 111, 111, 5, 0, own=True, batch=False)
    (q,) = _placed_on_disk((below,), emptied, 6_000_000, BLANK_MAX, emptied_max=PROCESS).whole
    assert q.parsed_at == (-1,) and q.units == () and not q.opened, q
    (q,) = _placed_on_disk((below,), emptied, 6_000_000, BLANK_MAX, emptied_max=-1).whole
    assert q.parsed_at == (100,), q


@pytest.mark.parametrize("light_offset,at", [(2, 20), (1, 20), (0, 20)], ids=["past", "at", "zero"])
def test_a_light_unit_of_a_held_light_queue_goes_by_put_message_position_info(light_offset: int, at: int) -> None:
    """multiDispatchLmqQueue hands the light unit to putMessagePositionInfo on the loaded queue: from the write position
    and max the cut left, appended at the write position whatever its light queue offset past it (broker case: 2,
    at 20); T5's own unit the rebuild's own dispatch's (a new queue)."""
    light = ParsedUnit(*LIGHT_KEY, BLANK_MAX, 111, light_offset, 0, own=False, batch=False)
    (q,) = _placed_on_disk((T5, light), {**T0_KEPT, **LIGHT_KEPT}, 6_000_000, BLANK_MAX).whole
    assert (q.topic, q.walk_end, q.parsed_at) == ("%LMQ%q1", 20, (at,)), q
    assert q.units == ((at, BLANK_MAX, 111, 0),) and not q.opened, q


def test_a_light_unit_below_the_held_light_queues_write_position_is_dropped() -> None:
    """Its light queue offset * 20 below the write position, not 0: "build consume queue repeatedly"."""
    light = ParsedUnit(*LIGHT_KEY, BLANK_MAX, 111, 1, 0, own=False, batch=False)
    (q,) = _placed_on_disk((T5, light), {**T0_KEPT, LIGHT_KEY: (400, True, 40, False)}, 6_000_000, BLANK_MAX).whole
    assert q.parsed_at == (-1,) and q.units == (), q


@pytest.mark.parametrize("light_offset,blank_until", [(2, 40), (0, 0)], ids=["past", "zero"])
def test_a_light_unit_of_a_light_queue_the_cut_emptied_gets_its_first_file_where_its_offset_falls(
        light_offset: int, blank_until: int) -> None:
    """5.5.1: the emptied light queue has no file and max -1 (recoverOffsetTable's correctMinOffset on every loaded
    queue, light ones too): multiDispatchLmqQueue's putMessagePositionInfo creates its first file at 0,
    fillPreBlank units up to the light queue offset's place, the unit there (broker case: 2, at 40)."""
    light = ParsedUnit(*LIGHT_KEY, BLANK_MAX, 111, light_offset, 0, own=False, batch=False)
    (q,) = _placed_on_disk((T5, light), {**T0_KEPT, **LIGHT_EMPTIED}, 6_000_000, BLANK_MAX).whole
    at = 20 * light_offset
    assert (q.topic, q.opened, q.blank_until, q.parsed_at) == ("%LMQ%q1", (0,), blank_until, (at,)), q
    assert q.units == ((at, BLANK_MAX, 111, 0),), q


@pytest.mark.parametrize("light_queue,at", [(LIGHT_KEPT, 20), (LIGHT_EMPTIED, 40)], ids=["held", "emptied"])
def test_with_ext_files_a_light_unit_puts_no_ext_unit_and_keeps_its_tags_code(light_queue: dict, at: int) -> None:
    """putMessagePositionInfoWrapper puts T5's ext unit (its unit, the rebuild's own dispatch's, holds the address);
    multiDispatchLmqQueue's putMessagePositionInfo puts the light unit with the request's tags code, no ext unit
    (broker cases -embedded-light-held-disk-ext, -embedded-light-emptied-ext: tags code 0, no ext file)."""
    t0_end, light_end = 20 * (495_621 + 11_207), 0
    placed = _placed_on_disk((T5, LIGHT), {**T0_KEPT, **light_queue}, 6_000_000, BLANK_MAX, 48 * 1024 * 1024,
                             {("T0", 0): t0_end, LIGHT_KEY: light_end})
    (q,) = placed.whole
    assert placed.ext_put == (("T5", 0, 1),), placed
    assert q.parsed_at == (at,) and q.units == ((at, BLANK_MAX, 111, 0),), q


@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
def test_on_533_a_light_queue_the_cut_emptied_keeps_the_max_process_offset(ext: bool) -> None:
    """5.3.3: the cut empties the loaded light queue as an own one (ConsumeQueueStore.truncateDirty: every loaded
    queue), its max processOffset, which correctMinOffset with no file leaves; multiDispatchLmqQueue's
    putMessagePositionInfo keeps a light unit ending past it: a first file at 0, fillPreBlank units up to its light
    queue offset's place, the unit there (broker case 5.3.3-...-embedded-light-emptied: 2, at 40); one ending at or
    below processOffset is dropped, where 5.5.1's max -1 keeps it."""
    on_disk = {**T0_KEPT, **LIGHT_EMPTIED}
    ext_size = 48 * 1024 * 1024 if ext else 0
    placed = _placed_on_disk((T5, LIGHT), on_disk, 6_000_000, BLANK_MAX, ext_size, {("T0", 0): 0, LIGHT_KEY: 0},
                             emptied_max=PROCESS)
    (q,) = placed.whole
    assert (q.topic, q.opened, q.blank_until, q.parsed_at) == ("%LMQ%q1", (0,), 40, (40,)), q
    assert q.units == ((40, BLANK_MAX, 111, 0),) and not any(k[:2] == LIGHT_KEY for k in placed.ext_put), placed
    below = ParsedUnit(*LIGHT_KEY, PROCESS - 111, 111, 2, 0, own=False, batch=False)
    (q,) = _placed_on_disk((T5, below), on_disk, 6_000_000, BLANK_MAX, emptied_max=PROCESS).whole
    assert q.parsed_at == (-1,) and q.units == () and not q.opened, q
    (q,) = _placed_on_disk((T5, below), on_disk, 6_000_000, BLANK_MAX, emptied_max=-1).whole
    assert q.parsed_at == (40,), q


def _reput_to_next_file(units: tuple[ParsedUnit, ...], **config: object) -> tuple[int, object]:
    """``reput_after_cut`` where the cut leaves T9 its ``fillPreBlank`` unit only and T0 a file (the
    ``-next-file`` stores' state) and the check at 2147483647 parses messages of ``units`` there, then goes on at
    the data file's end, the next data file's start, before DLedger's committed position."""
    cut = {("T9", 0): (BLANK_MAX, True, 20, False), **T0_KEPT}
    on_disk = QueuesOnDisk(NEXT_END - 249, lambda _offset, _walked: cut)
    records = ((BLANK_MAX, BLANK_MAX + 111),) if units else ()
    conf = BrokerConfig(brokerVersion="5.5", recheckReputOffsetFromCq=True, mappedFileSizeCommitLog=100_000_000,
                        **config)  # type: ignore[arg-type]
    return reput_after_cut(on_disk, PROCESS, Checkpoint(logics_physical_offset=PROCESS + 50_000_000), conf,
                           min_offset=0, confirm_offset=NEXT_END, log_end=NEXT_END, why="walked nothing",
                           inside=lambda _pos: (FILE_END, records, units))


def test_the_next_data_file_with_a_parsed_unit_in_a_new_queue_is_modelled() -> None:
    reput, cut = _reput_to_next_file((T5,))
    assert reput == FILE_END and cut is not None and cut.inside_from == BLANK_MAX and not cut.inside_placed.whole


def test_the_next_data_file_after_a_held_queues_unit_ending_before_it_is_modelled() -> None:
    """The parsed T0 unit appended at T0's write position, the next file's T0 units after it (broker case
    -next-file-embedded-t0)."""
    reput, cut = _reput_to_next_file((ParsedUnit("T0", 0, BLANK_MAX, 111, 600_000, 0, own=True, batch=False),))
    assert reput == FILE_END and cut is not None
    assert [(q.topic, q.parsed_at) for q in cut.inside_placed.whole] == [("T0", (9_912_420,))], cut.inside_placed


def test_the_next_data_file_with_ext_files_is_modelled() -> None:
    """Broker cases -next-file-ext and -next-file-embedded-t0-ext."""
    reput, cut = _reput_to_next_file((T5,), enableConsumeQueueExt=True)
    assert reput == FILE_END and cut is not None and cut.inside_placed.ext_put == (("T5", 0, 1),), cut


@pytest.mark.parametrize("offset", [FILE_END + 500, FILE_END - 110, FILE_END - 111],
                         ids=["past", "just-past", "at"])
def test_the_next_data_file_after_a_held_queues_unit_ending_past_it_drops_to_its_end(offset: int) -> None:
    """A parsed own unit of T0 whose end (its PHYSICALOFFSET field + size) lies past the next data file's start: T0's
    max then, at or below which the reput drops T0's units from there (broker cases
    tests/test_dledger_walked_nothing_2gib_next_file_past_broker.py); one ending at that start drops none."""
    reput, cut = _reput_to_next_file((ParsedUnit("T0", 0, offset, 111, 600_000, 0, own=True, batch=False),))
    assert reput == FILE_END and cut is not None
    assert cut.drops_to == ({("T0", 0): offset + 111} if offset + 111 > FILE_END else {}), cut.drops_to


@pytest.mark.parametrize("unit, held", [
    (ParsedUnit(*LIGHT_KEY, FILE_END + 500, 111, 2, 0, own=False, batch=False), LIGHT_KEPT),
    (ParsedUnit("BT0", 0, FILE_END + 500, 111, 7, 0, own=True, batch=True, store_time=1, base=7, batch_size=3),
     {("BT0", 0): (PROCESS - 500, True, 46, False)})], ids=["light", "batch"])
def test_the_next_data_file_stays_refused_after_a_held_light_or_batch_unit_ending_past_it(unit, held) -> None:  # noqa: ANN001
    """A parsed light unit, or a batch queue's, appended to a queue on disk, ending past the next data file's start:
    no broker case; one line."""
    cut = {("T9", 0): (BLANK_MAX, True, 20, False), **T0_KEPT, **held}
    on_disk = QueuesOnDisk(NEXT_END - 249, lambda _offset, _walked: cut)
    conf = BrokerConfig(brokerVersion="5.5", recheckReputOffsetFromCq=True, mappedFileSizeCommitLog=100_000_000)
    with pytest.raises(UnsupportedConfigError, match=f"whose light or batch unit, appended to {unit.topic}/0, a "
                       "queue the store holds files of, ends past it") as e:
        reput_after_cut(on_disk, PROCESS, Checkpoint(logics_physical_offset=PROCESS + 50_000_000), conf,
                        min_offset=0, confirm_offset=NEXT_END, log_end=NEXT_END, why="walked nothing",
                        inside=lambda _pos: (FILE_END, ((BLANK_MAX, BLANK_MAX + 111),), (unit,)))
    assert f"set at {BLANK_MAX} " in str(e.value) and "\n" not in str(e.value), str(e.value)
