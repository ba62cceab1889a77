"""verify's ext units orphaned of a queue the 5.5.1 cut left with no file (max -1, ``QueueCut.reset``) that the
start's reput, set at 2147483647 inside an entry, writes anew before the walk's data file
(:func:`pipelines.verify.ext_reput.ext_reput_puts`): not predicted, one line (the broker case:
``-past-2gib-before-no-file-ext``, ``tests/test_dledger_2gib_before_queues_broker.py``, ``DLEDGER_2GIB=1``)."""
from __future__ import annotations

from test_verify_ext_orphans_broker import _crash

from pipelines.verify.ext_reput import ext_reput_puts


def test_a_queue_the_reput_set_inside_an_entry_writes_anew_before_the_walk_is_not_predicted():
    reset = (("T0", 0),)
    back, why = ext_reput_puts(_crash(before=True, reset=reset, inside_from=2147483647), 5000)  # type: ignore[arg-type]
    assert back == {} and why["T0/0"].startswith("the cut left it no file (max -1)") and "\n" not in why["T0/0"]
    # not set inside an entry (ext_before_walk's _reset_positions place its units), or not before the walk: counted
    assert ext_reput_puts(_crash(before=True, reset=reset), 5000) == ({"T0/0": 2}, {})  # type: ignore[arg-type]
    assert ext_reput_puts(_crash(reset=reset, inside_from=2147483647), 5000) == ({"T0/0": 2}, {})  # type: ignore
