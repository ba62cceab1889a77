"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) that reach a refusal the old
difference model of records past the walk's end (:mod:`store_format.dledger_inside_past`) kept for an ordinary queue
only as a gate, the replay of that queue (:mod:`store_format.dledger_inside_replay`) deciding what the broker writes:
``-past-cut-two-over-wide``, the -past-cut-two-over layout (two T0/0 units cut, the parsed T0/0 message ending where
the second cut record ends, so that the reput goes on at the damaged message's entry without dispatching the cut
units again) with consume queue files of 13 units, so that the rebuild's own dispatch, one unit further than the
broker, creates file 520 for the damaged message's unit, where the broker puts that unit at 500 (file 260's last
place) and creates file 520 for the last message's unit, which the rebuild appends past that file's start."""
from __future__ import annotations

from broker_dledger_inside_past_far_scenarios import PAST_WIDE_CQ_SIZE
from broker_dledger_inside_past_more_scenarios import embedded_to_entry_past_cut_two_over_scenario


def gate_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-cut-two-over-wide`` (consume queue
    files of :data:`PAST_WIDE_CQ_SIZE` bytes: 520, where the rebuild's dispatch appends the damaged message's unit
    and the broker the last one's, a file's start)."""
    over = embedded_to_entry_past_cut_two_over_scenario(base)
    return [{**over, "config": {**over["config"], "mappedFileSizeConsumeQueue": str(PAST_WIDE_CQ_SIZE)},
             "name": f"{over['name']}-wide"}]
