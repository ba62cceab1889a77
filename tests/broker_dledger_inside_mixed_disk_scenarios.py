"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a queue holding a
record's own units and light ones (``%LMQ%q1``, queue 0) on disk before the walk (``keepQueues``), a file of it left
by the cut: cut units the reput dispatches again after a parsed unit (``-light-mixed-skip-dropped-kept``), records
past the walk's end after them (``-light-mixed-skip-dropped-past-kept``), no parsed unit going to it
(``-light-mixed-skip-t0-kept``, ``-light-mixed-skip-t0-past-kept``), each also with its file replaced before the
restart by one holding light unit 2 alone (``-planted``: :func:`mixed_disk_scenarios`); with ext files
(:func:`mixed_disk_ext_scenarios`); with units of both kinds in
the walk's earlier data file, a cut unit dispatched again after the parsed one (``-to-entry-earlier-light-both-kept``)
and no parsed unit there, the cut alone (``-earlier-light-mixed-t7-both-kept``, ``-planted``:
:func:`mixed_disk_both_scenarios`).  :func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists
them."""
from __future__ import annotations

import base64

# the %LMQ%q1/0 unit (commitlog offset, size) of light put 2 (light queue offset 2) of the -light store and those
# built on it, planted alone in the -planted stores' file (the test checks it against the log's record)
PLANTED_LIGHT_2 = (76788, 300)


def mixed_disk_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): the -light-mixed-skip-dropped, -skip-dropped-past,
    -skip-t0 and -skip-t0-past stores (:mod:`broker_dledger_inside_mixed_replay_scenarios`) with the queues kept
    (``-kept``: %LMQ%q1/0 on disk before the walk as the crashed broker's dispatch wrote it: light units 0-2 at 0-40,
    the %LMQ%q1 record's own unit at 60, light units 4 and 5 at 80 and 100 in the -past ones), and each with that file
    replaced before the restart (``plantFiles``) by one holding only light unit 2 (:data:`PLANTED_LIGHT_2`) at 0
    (``-kept-planted``): the walk's ``putMessagePositionInfo`` drops light units 0-2 (at or below the loaded max),
    appends the own unit (own queue offset 0) at 20 and the last walked message's light unit (queue offset 3, 60 not
    below 40) at 40; the cut takes both (past processOffset) and leaves write position 20, where the parsed unit (own
    queue offset 1, -skip-dropped) goes, the last walked message's light unit dispatched again after it (the walk's
    units alone leave write position 60: the parsed unit dropped, that light unit at 60), the records past the walk's
    end after those.  :func:`mixed_disk_both_scenarios` and :func:`mixed_disk_ext_scenarios` too."""
    from broker_dledger_inside_mixed_replay_scenarios import (
        embedded_light_mixed_skip_dropped_past_scenario,
        embedded_light_mixed_skip_dropped_scenario,
        embedded_light_mixed_skip_t0_past_scenario,
        embedded_light_mixed_skip_t0_scenario,
    )
    unit = PLANTED_LIGHT_2[0].to_bytes(8, "big") + PLANTED_LIGHT_2[1].to_bytes(4, "big") + bytes(8)
    out = []
    for base in (embedded_light_mixed_skip_dropped_scenario(sc), embedded_light_mixed_skip_dropped_past_scenario(sc),
                 embedded_light_mixed_skip_t0_scenario(sc), embedded_light_mixed_skip_t0_past_scenario(sc)):
        kept = {**base, "keepQueues": True, "name": f"{base['name']}-kept"}
        out += [kept, _planted(kept, unit)]
    return out + mixed_disk_both_scenarios(sc) + mixed_disk_ext_scenarios(sc)


def mixed_disk_both_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-to-entry-earlier-light-both-kept``, the
    -to-entry-earlier-light-both store
    (:func:`broker_dledger_inside_mixed_earlier_scenarios.embedded_to_entry_earlier_both_scenario`) with the queues
    kept (%LMQ%q1/0 on disk, its units of both kinds in the walk's earlier data file: the own unit at 0, light unit 0
    at 20; the parsed light unit goes to 40, the last message's light unit, cut, dispatched again and dropped
    again), and ``-earlier-light-mixed-t7-both-kept``, the -earlier-light-mixed-t7-both store
    (:func:`broker_dledger_inside_mixed_earlier_scenarios.embedded_earlier_both_mixed_scenario` with ``light``
    false) so kept, no parsed unit going to %LMQ%q1 (the last message's own unit cut, not dispatched again);
    ``-planted``: its file replaced by one holding light unit 1 alone
    (:data:`broker_dledger_inside_mixed_earlier_scenarios.PLANTED_BOTH_UNIT`) at 0: the walk appends the last
    message's own unit (own queue offset 1) at 20, which the cut takes: write position 20."""
    from broker_dledger_inside_mixed_earlier_scenarios import (
        PLANTED_BOTH_UNIT,
        embedded_earlier_both_mixed_scenario,
        embedded_to_entry_earlier_both_scenario,
    )
    to_entry = embedded_to_entry_earlier_both_scenario(sc)
    t7 = embedded_earlier_both_mixed_scenario(sc, light=False)
    t7_kept = {**t7, "keepQueues": True, "name": f"{t7['name']}-kept"}
    unit = PLANTED_BOTH_UNIT[0].to_bytes(8, "big") + PLANTED_BOTH_UNIT[1].to_bytes(4, "big") + bytes(8)
    return [{**to_entry, "keepQueues": True, "name": f"{to_entry['name']}-kept"}, t7_kept, _planted(t7_kept, unit)]


def mixed_disk_ext_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1), with ``enableConsumeQueueExt`` (ext files of 10 units)
    and the queues kept (%LMQ%q1/0 and its ext file on disk before the walk as the crashed broker's dispatch wrote
    them: ext unit 0 for its own unit): ``-light-own-to-entry-ext-kept`` (a parsed light unit, the cut own unit
    dispatched again), ``-light-mixed-parsed-own-ext-kept`` (a parsed own unit) and
    ``-light-mixed-skip-t0-own-ext-kept`` (no parsed unit there, the cut own unit dispatched again).  The walk's
    ``putMessagePositionInfoWrapper`` puts ext unit 1 for the own unit it drops onto those files, so the reput's ext
    unit is 2 (ordinal 1 without the queues kept)."""
    from broker_dledger_inside_light_scenarios import (
        _ext,
        embedded_light_mixed_parsed_own_scenario,
        embedded_light_mixed_to_entry_scenario,
    )
    from broker_dledger_inside_mixed_more_scenarios import light_mixed_skip_t0_ext
    out = []
    for base in (_ext(embedded_light_mixed_to_entry_scenario(sc, own_tail=True)),
                 _ext(embedded_light_mixed_parsed_own_scenario(sc)), light_mixed_skip_t0_ext(sc, own=True)):
        out.append({**base, "keepQueues": True, "name": f"{base['name']}-kept"})
    return out


def _planted(kept: dict, unit: bytes) -> dict:
    """``kept`` with its %LMQ%q1/0 file replaced before the restart by one holding ``unit`` alone at 0."""
    file = unit + bytes(int(kept["config"]["mappedFileSizeConsumeQueue"]) - len(unit))
    return {**kept, "name": f"{kept['name']}-planted",
            "plantFiles": {f"consumequeue/%LMQ%q1/0/{0:020d}": base64.b64encode(file).decode()}}
