"""The 5.3.3 broker's start over topic ""'s consume queue files (``consumequeue/<queueId>/<file>``: the units of
multi-dispatch requests naming an empty queue, ``ConsumeQueue.multiDispatchLmqQueue``), on the store of
tests/test_rocksdb_light_empty_broker.py's ``5.3.3-light-empty-files`` scenario, in the shapes the 5.5.1 broker
restarts in tests/test_light_empty_restart_broker.py (``-cut``, ``-crash``) and tests/test_light_empty_reopen_broker.py
(``-later``, ``-planted``).

5.3.3 loads ``consumequeue/<queueId>/`` as topic "<queueId>" (``ConsumeQueueStore.loadConsumeQueues``, the same walk of
the folders as 5.5.1's), its ``CommitLog.recoverNormally`` dispatches the records past the loaded queues' max physical
offset (``getMaxPhyOffsetInConsumeQueue``), ``recoverAbnormally``'s walk every record from its first data file, and
``start()`` sets the reput at the commitlog's confirm offset, its end (no second reput without
``recheckReputOffsetFromCq``): the rule of :mod:`store_format.empty_topic_restart`.  Each test first asserts what the
broker wrote (the checks of those two modules, run on the 5.3.3 stores), then ``verify`` (queues kept) or
``rebuild --as-restart`` (queues deleted) of the store as the start found it against the broker's files.

One rule is 5.3.3's own: its ``ConsumeQueue.correctMinOffset`` reads before the start of a queue's last file when
nothing was written there, so a start whose dispatch leaves a reopened queue so fails (``-empty-last``: files of two
units; with three the same store starts), which ``verify`` and ``--as-restart`` say in one line
(:func:`store_format.empty_topic_restart.start_fails`); the 5.5.1 broker starts over the same store
(``PIPELINES_FULL_SUITE=1``) and ``--as-restart`` writes its files.

By default ``-empty-last`` (the 5.5.1 modules check the shared rule by default); ``PIPELINES_FULL_SUITE=1`` adds
``-planted`` (the recovery's units written over planted files, ``fillPreBlank`` before queue 0's), ``-later``
(``fillPreBlank`` over earlier units, checked by ``verify``), ``-cut`` and ``-crash``.
"""
from __future__ import annotations

import os
from pathlib import Path

import broker_harness as bh
import pytest
import test_light_empty_reopen_broker as reopen
import test_light_empty_restart_broker as restart
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.3.3"


def _empty_last(line: str = LINE) -> dict:
    """``-empty-last``: consume queue files of two units (``mappedFileSizeConsumeQueue=40``) and one more request
    asking topic "" queue 1 for queue offset 1 (``",%LMQ%a"``, ``"1,3"``, put last): that queue's file 0 holds its
    units asked for 0 and 9 (the second appended after the first), full, so the put opens file 40 for this unit and
    the queue offset check drops it (20 below the write position 40): an empty last file.  The restart (queue
    folders deleted) dispatches every record again, leaving the reopened queue so (``loadMayFail``)."""
    files = next(sc for sc in restart.empty_name_scenarios(line) if sc["name"].endswith("-files"))
    extra = Messages(142, ["T1"], queues=2).one(
        queueId=1, properties={"INNER_MULTI_DISPATCH": ",%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "1,3"})
    return {**files, "name": f"{files['name']}-empty-last", "messages": [*files["messages"], extra],
            "config": {**files["config"], "mappedFileSizeConsumeQueue": "40"}, "keepBefore": True, "loadMayFail": True}


_SCENARIOS = [sc for sc in restart.restart_scenarios(LINE) if not sc["name"].endswith("-kept")] \
    + reopen.reopen_scenarios(LINE) + [_empty_last()]
SCENARIOS = {LINE: bh.bounded(_SCENARIOS, full_only=("-cut", "-crash", "-later", "-planted"))}
if os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0"):   # 5.5.1's start over the same store (guarded)
    SCENARIOS["5.5.1"] = [_empty_last("5.5.1")]
KEPT, LATER, PLANTED, EMPTY_LAST = ([pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS[LINE]
                                     if sc["name"].endswith(ends)]
                                    for ends in (("-cut", "-crash"), ("-later",), ("-planted",), ("-empty-last",)))
EMPTY_LAST_551 = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS.get("5.5.1", ())]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.3.3 file queue store(s) whose start finds topic \"\" files", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the 5.3.3 broker's restart found it (``before/``) and left it (``expected/``), with our
    ``verify`` (queues kept) or ``rebuild --as-restart`` (queues deleted) of ``before/``."""
    bh.written_once(request, _RUNS, STORES, every=True,
                    then=lambda r: None if r["written"].get("loadFailed") else bh.restart_checked(r))
    return _RUNS[request.node.callspec.params["name"]]


@pytest.mark.parametrize("name", KEPT)
def test_the_start_leaves_or_writes_back_topic_empty_files(written, name):
    """``-cut``, ``-crash``: the 5.5.1 module's checks of what the broker wrote (topic "" not loaded, its files as
    found; the crash walk reopening queues 0 and 1 over them with the same units)."""
    restart.test_the_start_leaves_topic_empty_files_as_it_found_them(written, name)


@pytest.mark.parametrize("name", KEPT)
def test_verify_predicts_topic_empty_as_the_5_3_3_start_left_it(written, name):
    """``verify`` of ``-cut`` and ``-crash`` as the start found them: the broker's figures per topic "" queue."""
    restart.test_verify_predicts_topic_empty_as_the_broker_s_start_left_it(written, name)


@pytest.mark.parametrize("name", LATER)
def test_a_5_3_3_start_dispatching_the_later_requests_blanks_the_earlier_units(written, name):
    """``-later``: the broker's start put topic "" queue 1 put 6's unit after blanks over the earlier ones, queue 0
    put 10's; ``verify`` of ``before/`` gives its figures."""
    reopen.test_a_start_dispatching_the_later_requests_blanks_the_earlier_units(written, name)


@pytest.mark.parametrize("name", PLANTED)
def test_as_restart_writes_the_5_3_3_start_s_units_over_planted_files(written, name):
    """``-planted``: the broker's recovery wrote the first two requests' units over the planted bytes;
    ``rebuild --as-restart`` writes every consume queue and index file as the broker's, byte for byte."""
    reopen.test_as_restart_writes_the_start_s_units_over_planted_files(written, name)


@pytest.mark.parametrize("name", EMPTY_LAST)
def test_with_a_second_reput_the_start_still_fails_in_one_line(written, name, tmp_path):
    """``-empty-last`` with ``recheckReputOffsetFromCq=true`` added: the broker's ``load()`` failed (what it wrote),
    and ``doRecheckReputOffsetFromCq`` runs in ``start()``, after it, so the setting changes nothing: ``rebuild
    --as-restart`` exits 2 with the one line of the failing 5.3.3 start (:func:`store_format.empty_topic_restart.
    start_fails`), the second reput's start being known (``RecoveryPlan.restart_reput_from``)."""
    d = Path(written["scenario"]["dir"])
    assert written["written"].get("loadFailed"), written["written"]
    conf = tmp_path / "broker.conf"
    conf.write_text((d / "broker.conf").read_text() + "\nrecheckReputOffsetFromCq=true\n")
    code, _, err = bh.cli(["rebuild", "--store", str(d / "before"), "--out", str(tmp_path / "ours"), "--as-restart",
                           "--config", str(conf), "--broker-version", bh.BROKER_VERSION_ARG[LINE], "--split-size",
                           "4k", "--no-tables"])
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(errors) == 1, err[-2000:]
    assert 'topic "" queue(s) 1 ' in errors[0] and "5.3.3 store's start fails" in errors[0], errors[0]


@pytest.mark.parametrize("name", EMPTY_LAST)
def test_a_start_leaving_a_reopened_queue_an_empty_last_file_fails(written, name, tmp_path):
    """``-empty-last``, what the broker wrote: its restart over the store (queue folders deleted) failed to load, after
    its recovery's dispatch had left topic "" queue 1 two files in ``store/``, ``00000000000000000040`` all zeros
    (nothing written).  Then ``rebuild --as-restart`` of ``before/`` exits 2 with one error line saying the 5.3.3
    start fails, and ``verify`` of ``before/`` says so in one note line instead of predicting topic ""'s files."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    q1 = d / "store" / "consumequeue" / "1"
    assert sorted(p.name for p in q1.iterdir()) == [f"{0:020d}", f"{40:020d}"], sorted(q1.iterdir())
    assert not (q1 / f"{40:020d}").read_bytes().strip(b"\0") and len((q1 / f"{0:020d}").read_bytes()) == 40
    assert w.get("loadFailed"), w
    code, _, err = bh.cli(["rebuild", "--store", str(d / "before"), "--out", str(tmp_path / "ours"), "--as-restart",
                           "--config", str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[LINE],
                           "--split-size", "4k", "--no-tables"])
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(errors) == 1, err[-2000:]
    assert 'topic "" queue(s) 1 ' in errors[0] and "5.3.3 store's start fails" in errors[0], errors[0]
    notes = bh.verified(d / "before", d / "broker.conf", bh.BROKER_VERSION_ARG[LINE])["restart"]["notes"]
    notes = [n for n in notes if n.startswith('topic "" queue')]
    assert len(notes) == 1 and notes[0].startswith('topic "" queue(s) 1 ') \
        and "5.3.3 store's start fails" in notes[0], notes


@pytest.mark.parametrize("name", EMPTY_LAST_551)
def test_the_5_5_1_start_over_the_same_store_keeps_the_empty_last_file(written, name):
    """``-empty-last`` on 5.5.1 (``PIPELINES_FULL_SUITE=1``), whose ``correctMinOffset`` guards the last file's read
    position: what the broker wrote, its restart loaded and left topic "" queue 1 two files, ``00000000000000000040``
    all zeros; ``rebuild --as-restart`` of ``before/`` writes every consume queue and index file as the broker's."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    assert w.get("ok") and not w.get("loadFailed"), w
    q1 = d / "expected" / "consumequeue" / "1"
    assert sorted(p.name for p in q1.iterdir()) == [f"{0:020d}", f"{40:020d}"], sorted(q1.iterdir())
    assert not (q1 / f"{40:020d}").read_bytes().strip(b"\0") and (q1 / f"{0:020d}").read_bytes().strip(b"\0")
    bh.restart_files_are_the_broker_s(written)
