"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose cases only the replay of an
ordinary queue with consume queue ext files (:mod:`store_format.dledger_inside_replay`, ``enableConsumeQueueExt``)
models: the -past-cut-two-some-emptied and -past-cut-two-over-emptied stores
(:mod:`broker_dledger_inside_replay_scenarios`: T6/0, a topic of its own with no unit below processOffset, left with
no file by the 5.5.1 cut, its first cut unit inside the parsed message, its records past the walk's end after it)
with ext files of 10 units (``-ext``, as the other ``-ext`` stores): each unit the reput dispatches into T6/0 puts its
ext unit first, a cut unit dispatched again a new one; and the -past-cut-two-over-wide and -past-cut-two-beyond
stores (:mod:`broker_dledger_inside_gate_scenarios`: T0/0's records past the walk's end that the rebuild's own
dispatch puts elsewhere than the broker, or into a file it creates where the broker puts units of its own) with
those ext files (``-ext``)."""
from __future__ import annotations

from broker_dledger_inside_gate_scenarios import gate_scenarios
from broker_dledger_inside_replay_scenarios import replay_scenarios

# ext files of 204 bytes: 10 units each, the 11th at the next file's start (ConsumeQueueExt.put)
EXT_REPLAY = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}


def ext_replay_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-past-cut-two-some-emptied-ext``, its ``-zero-ext``,
    ``-past-cut-two-over-emptied-ext`` and its ``-zero-ext`` (:func:`replay_scenarios` with :data:`EXT_REPLAY`),
    ``-past-cut-two-over-wide-ext`` and ``-past-cut-two-beyond-ext`` (:func:`gate_scenarios` with it)."""
    return [{**sc, "config": {**sc["config"], **EXT_REPLAY}, "name": f"{sc['name']}-ext"}
            for sc in replay_scenarios(base) + gate_scenarios(base)]
