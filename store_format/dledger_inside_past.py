"""Where a 5.5.1 DLedger start's reput set inside an entry puts the records of a queue the walk wrote that lie past
the walk's end (a walk ended by a damaged message), after the parsed units and the cut units it dispatches again.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` (with ``ConsumeQueueExt.put`` before it, its
address the appended unit's tags code: ``decorate``) and ``MappedFileQueue.getLastMappedFile``, applied to each record
from the state the earlier units left (:func:`put_cq`); what :func:`store_format.dledger_inside_units.place_inside`
hands over and the rules it states (its module docstring). Every queue it is asked about is an ordinary one (ext files
or not), for which it only gates its refusals, :mod:`store_format.dledger_inside_replay` placing and writing that queue
whole, and of those :func:`place_past` (``replayed``) drops the ones the replay decides, checked against the broker:
records past the walk's end put elsewhere than the rebuild's dispatch puts them (``-past-cut-two-beyond``: one it drops,
the next a unit further) and into a file that dispatch creates where the broker puts units of its own
(``-past-cut-two-over-wide``: the broker creating it for a later record). Kept: a record the broker appends into a file
``apply_cut`` removes, and :func:`past_no_file`'s queue offset below the rebuild's write position (no broker case
reaches them).
"""
from __future__ import annotations

from .dledger_inside_state import InsideUnit, Tags, WalkedQueue, put_cq, refuse
from .layout import CQ_UNIT_SIZE

__all__ = ["past_no_file", "place_past"]


def past_no_file(key: tuple[str, int], s: WalkedQueue, cq_file_size: int, at: int,
                 opened: list[tuple[str, int, int]], blanks: list[tuple[str, int, int]],
                 parsed_appended: bool) -> list[tuple[str, int, int, int]]:
    """The records of queue ``key`` past the walk's end (:attr:`WalkedQueue.past`) in a queue the cut left with no
    file, after the parsed units and its cut units dispatched again (``s``: the state those left), each by
    ``ConsumeQueue.putMessagePositionInfo`` (:func:`put_cq`): as :attr:`Placed.again_moved` rows, from the queue
    position the rebuild's own dispatch of it appends it at (after every walk unit, one after the other:
    ``dledger_crash_cut._appended_keys``) to where the broker appends it (-1: dropped); none of the rebuild's files
    of the queue stays but for those ``getLastMappedFile`` creates, which ``apply_cut`` writes anew.  The rebuild's
    dispatch appends no parsed unit of such a queue (``parsed_appended``) and drops none of those records for their
    ends: every cut unit is dispatched again (``dledger_inside_walked.inside_units`` refuses the rest), so the reput
    goes on at or before the first one's start, the parsed messages end there, below the end of that cut unit (the
    queue's max in the rebuild), and the records past the walk's end start past every walk unit.  Refused (one line)
    where the rebuild's dispatch drops one for its queue offset, below its write position (after the walk's last
    unit: a queue offset counter that went back between the walk's records and those, the rebuild's queue holding
    no unit of it to move)."""
    # every cut unit dispatched again: the parsed units of this queue end before the first one's end (the rebuild's
    # max), and the records past the walk's end start past every walk unit
    assert not (parsed_appended and s.past), "no parsed unit of a queue whose cut units all go again appended"
    out = []
    for offset, size, queue_offset in s.past:
        end = offset + size
        assert end > s.rebuild_max, "a record past the walk's end ends past every walk unit"
        if queue_offset != 0 and queue_offset * CQ_UNIT_SIZE < s.rebuild_write:
            raise refuse(at, f"for {key[0]}/{key[1]}, a queue the cut left with no file whose record past the walk's "
                              f"end at {offset} the rebuild's dispatch does not append right after the walk's units "
                              "(its queue offset below the rebuild's write position)")
        out.append((*key, s.rebuild_write, put_cq(key, s, end, queue_offset, cq_file_size, opened, blanks)))
        s.rebuild_write, s.rebuild_max = s.rebuild_write + CQ_UNIT_SIZE, end
    return out


def place_past(key: tuple[str, int], s: WalkedQueue, out: list[InsideUnit], cq_file_size: int, at: int,
               opened: set[tuple[str, int, int]], removed: set[tuple[str, int, int]],
               kept: list[tuple[str, int, int, int, int]], moved_to: list[tuple[str, int, int]],
               tags: Tags | None = None, put_past: list[InsideUnit] | None = None,
               made: list[tuple[str, int, int]] | None = None,
               extra: list[tuple[str, int, int]] | None = None, replayed: bool = False) -> list[int]:
    """The records of queue ``key`` past the walk's end that the reput dispatches after the parsed units and the cut
    units (:attr:`WalkedQueue.past`), each by ``ConsumeQueue.putMessagePositionInfo`` from the state ``s`` those left:
    dropped when its end is at or below the queue's max or its ``queue offset * 20`` below the write position (not
    0), else appended at the write position.  The rebuild's own dispatch of them, after the walk's units and the
    parsed ones it appended (``s.rebuild_write``, ``s.rebuild_max``), applies the same rule; the commitlog offsets of
    those the broker drops (units lost) are returned.  Where the broker's write position is a file's start, past
    its max, ``getLastMappedFile`` creates that file (zeros) before the queue offset check, whether the unit is then
    appended or dropped; so does the rebuild's dispatch at its own write position (:mod:`store_format.consumequeue`):
    the same file when both stand there, nothing for ``apply_cut`` to write.  One the broker appends, as the rebuild
    does, in a file ``getLastMappedFile`` created for a parsed unit or a cut unit dispatched again (``opened``, which
    ``apply_cut`` writes anew) goes to ``kept``.  A file ``getLastMappedFile`` creates
    for the broker where the rebuild's dispatch creates none, or one ``apply_cut`` removes (``removed``:
    :attr:`Placed.rebuild_files`), goes to ``made`` (written anew: :attr:`Placed.opened`), and one the rebuild's
    dispatch creates where the broker creates none to ``extra`` (removed: :attr:`Placed.rebuild_files`; refused
    where the broker puts a unit in it; kept where the broker creates it for a later record, both standing there).
    Refused (one line) where the two differ elsewhere than a unit the broker
    drops that the rebuild puts where a parsed unit of ``out`` goes, or where the broker appends one in a file
    ``apply_cut`` removes.  Past cut units the reput does
    not dispatch again (``s.skipped``) the broker appends them from its write position after the parsed units, the
    rebuild after every walk unit: where both append every one, the first one's position goes to ``moved_to``
    else refused.  One the broker appends where the rebuild's dispatch drops it (its
    queue offset below the rebuild's write position, one parsed unit further: a parsed unit ending past the queue's
    last walk unit) goes to ``put_past``: written at the broker's position, its tags code
    by ``tags``, over what the rebuild put there (zeros or its parsed unit: :attr:`Placed.rebuild_units`), where no
    record before it went elsewhere than the rebuild puts it, none after it does, and its file is one both keep
    (neither created anew nor removed), without ``tags`` refused.  ``replayed`` (an ordinary queue, which
    :mod:`store_format.dledger_inside_replay` writes whole, the rows here dropped): neither a record put elsewhere
    than the rebuild puts it nor a file the rebuild's dispatch creates where the broker puts units of its own is
    refused."""
    parsed_at = {u.position for u in out if (u.topic, u.queue_id) == key}
    added = False   # a unit the broker appends where the rebuild drops it written (no shift after it)
    dropped = []
    shifted: list[int] = []   # the broker's positions of records the rebuild appends elsewhere (past skipped cut units)
    for offset, size, queue_offset in s.past:
        end = offset + size
        # getLastMappedFile on a full last file (the write position a file's start, past the max): a new file there
        rebuild_file = s.rebuild_write if end > s.rebuild_max and s.rebuild_write % cq_file_size == 0 else -1
        broker_file = s.write if end > s.max and s.write % cq_file_size == 0 else -1
        if broker_file == rebuild_file >= 0 and extra is not None and (*key, broker_file) in extra:
            extra.remove((*key, broker_file))   # created by the rebuild's dispatch for one before, by the broker now
        if (broker_file >= 0 or rebuild_file >= 0) and (broker_file != rebuild_file or (*key, broker_file) in removed):
            if made is None or extra is None or put_past is None or tags is None:
                raise refuse(at, f"for {key[0]}/{key[1]}, whose record past the walk's end at {offset} the reput "
                                  "would dispatch into a consume queue file it creates, other than the rebuild's")
            if broker_file >= 0 and (*key, broker_file) not in made:   # the broker creates a file where the
                # rebuild's dispatch creates none (or one apply_cut removes): written anew, zeros but for the
                # broker's units put there (those the rebuild puts there too: kept)
                made.append((*key, broker_file))
                opened.add((*key, broker_file))
                removed = removed - {(*key, broker_file)}
            if rebuild_file >= 0 and rebuild_file != broker_file and (*key, rebuild_file) not in extra:
                # the rebuild's dispatch creates one the broker does not create there: removed, where the broker
                # puts nothing in it (checked below)
                extra.append((*key, rebuild_file))
        repeat = queue_offset != 0 and queue_offset * CQ_UNIT_SIZE < s.rebuild_write
        rebuild = -1 if end <= s.rebuild_max or repeat else s.rebuild_write
        if rebuild >= 0:
            s.rebuild_write, s.rebuild_max = rebuild + CQ_UNIT_SIZE, end
        broker = -1 if end <= s.max or (queue_offset != 0 and queue_offset * CQ_UNIT_SIZE < s.write) else s.write
        if broker >= 0:
            s.write, s.max = broker + CQ_UNIT_SIZE, end
        elif rebuild < 0 or rebuild in parsed_at:   # after cut units dispatched again too (dledger_crash_cut.cut_queues
            # keeps the rebuild's bytes there and counts it lost)
            dropped.append(offset)
            continue
        if broker >= 0 > rebuild and tags is not None and put_past is not None and \
                (tags_code := tags(offset, size, key)) is not None and \
                not shifted and \
                (*key, broker - broker % cq_file_size) not in removed:
            # appended by the broker, dropped by the rebuild: the broker's unit written at its position
            put_past.append(InsideUnit(*key, broker, offset, size, tags_code))
            added = True
            continue
        if broker != rebuild:
            if not replayed and (added or not (s.skipped and broker >= 0 and rebuild >= 0)):
                raise refuse(at, f"for {key[0]}/{key[1]}, whose record past the walk's end at {offset} the reput "
                                  "dispatches afterwards elsewhere than the rebuild puts it")
            shifted.append(broker)
        if (file := (*key, broker - broker % cq_file_size)) in removed:
            raise refuse(at, f"for {key[0]}/{key[1]}, whose record past the walk's end at {offset} the reput "
                              "dispatches afterwards into a consume queue file written anew")
        if file in opened:
            kept.append((*key, broker, offset, size))
    extra_here = {f for f in extra or () if (f[0], f[1]) == key}
    if replayed:   # the replay writes the queue whole: a file both create, for different records, is no difference
        extra_here = set()
    if extra_here & opened or any((*key, u.position - u.position % cq_file_size) in extra_here
                                  for u in [*out, *(put_past or ())] if (u.topic, u.queue_id) == key) or \
            any((k[0], k[1], k[2] - k[2] % cq_file_size) in extra_here for k in kept):
        raise refuse(at, f"for {key[0]}/{key[1]}, whose records past the walk's end the rebuild's dispatch puts in a "
                          "consume queue file it creates where the broker puts units of its own")
    if shifted:   # moved as a whole: every record appended by both, none in a file written anew
        if not replayed and (len(shifted) != len(s.past) or any((k[0], k[1]) == key for k in kept)):
            raise refuse(at, f"for {key[0]}/{key[1]}, whose records past the walk's end the reput dispatches "
                              "afterwards elsewhere than the rebuild puts them, some dropped or in a file written anew")
        moved_to.append((*key, shifted[0]))
    return dropped
