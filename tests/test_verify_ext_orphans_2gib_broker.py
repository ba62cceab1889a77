"""verify's "ext units orphaned" after a 5.5.1 DLedger crash restart whose cut leaves a queue with no file (max -1,
``QueueCut.reset``) that the start's reput, set at 2147483647 inside an entry of a data file before the walk's, writes
anew from a message it parses there (``-past-2gib-before-no-file-ext``, T7/0; ``DLEDGER_2GIB=1`` only: some 2.3 GB of
data files, its ``before/`` copy as much).

The cut keeps the walk's T7 ext unit (``truncateDirtyLogicFiles`` with no unit left calls
``ConsumeQueueExt.truncateByMaxAddress`` with no address); ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext
unit for the parsed message, then ``putMessagePositionInfo`` writes it into a new file after ``fillPreBlank`` units,
holding that second address; the reput goes on at the 23rd data file and walks the walk's T7 record again: a third ext
unit, its unit (queue offset 0: no order check) appended holding that address.  So the kept units point at the second
and third ext units and the walk's (the first) is orphaned.  verify counts the parsed and walk units that rewrite from
empty appends (``ExtAgain.anew``, :func:`store_format.dledger_crash_before.ext_anew`;
:func:`pipelines.verify.ext_reput.ext_reput_puts`)."""
from __future__ import annotations

import os

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX, LINE, verify_restart, written
from broker_dledger_files import ext_figures_as_the_broker, pointed_ext_addresses
from test_dledger_2gib_again_broker import ext_units
from test_dledger_2gib_before_queues_broker import past_2gib_before_no_file_ext_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store,
              pytest.mark.skipif(os.environ.get("DLEDGER_2GIB") != "1", reason="a 2 GiB store: DLEDGER_2GIB=1")]

bh.skip_without_tools()

LONG_MIN = -2**63


def test_verify_counts_the_ext_units_a_queue_written_anew_from_a_parsed_message_leaves_orphaned(tmp_path):
    """The broker's files first: T7 had no file after the load (max -1), its ext files hold three units (the walk's,
    the parsed message's, the walk's record's again: the first and third alike), the units below its write position
    point at the second and third, the first orphaned.  verify's ext units appended and orphaned are the broker's,
    T7's too, with no line saying a figure is not predicted."""
    sc = past_2gib_before_no_file_ext_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load, after = w["queuesAfterLoad"]["T7/0"], w["queuesAfterDispatch"]["T7/0"]
    assert int(load["maxPhysicOffset"]) == -1 and not load["files"], load
    ext = ext_units(src, "T7")
    assert len(ext) == 3 and ext[0] == ext[2] != ext[1], ext
    pointed = pointed_ext_addresses(src, "T7/0", int(after["maxOffset"]))
    # fillPreBlank units hold tags code 0; the others the ext addresses of the second and third ext units
    assert pointed - {0} == {LONG_MIN + 20, LONG_MIN + 40}, (pointed, after)
    p = verify_restart(src, tmp_path / "figs")
    assert p is not None and not any("not predicted" in n for n in p["notes"]), p and p["notes"]
    figs = ext_figures_as_the_broker(p, w, src)
    assert figs["T7/0"][1::2] == (3, 1), figs   # the broker's: 3 appended, 1 orphaned (its first, the walk's)
