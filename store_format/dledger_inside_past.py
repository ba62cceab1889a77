"""Where a 5.x DLedger start's reput set inside an entry puts the records of a queue the walk wrote that lie past
the walk's end (a walk ended by a damaged message), after the parsed units and the cut units it dispatches again, in
a queue the cut left with no file (:func:`past_no_file`).

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` and ``MappedFileQueue.getLastMappedFile``,
applied to each record from the state the earlier units left (:func:`put_cq`); what
:func:`store_format.dledger_inside_units.place_inside` hands over and the rules it states (its module docstring).
Every queue it is asked about is an ordinary one (ext files or not) that :mod:`store_format.dledger_inside_replay`
places and writes whole, so it only gates its one refusal: a record whose queue offset lies below the rebuild's write
position (no broker case reaches it).  The records past the walk's end of a queue the cut left a file of go by the
replay alone: the gate that compared them with the rebuild's own dispatch (``place_past``: a record the broker
appends into a file ``--as-restart`` removes) is gone, since the replay's files are what ``apply_cut`` writes for
such a queue (those the cut leaves and those ``getLastMappedFile`` creates, every other staged file of it removed):
no record the broker appends lands in a removed file.
"""
from __future__ import annotations

from .dledger_inside_state import WalkedQueue, put_cq, refuse
from .layout import CQ_UNIT_SIZE

__all__ = ["past_no_file"]


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
