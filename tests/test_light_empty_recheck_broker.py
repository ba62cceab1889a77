"""A broker start over topic ""'s consume queue files (``consumequeue/<queueId>/<file>``: multi-dispatch requests
naming an empty queue, ``ConsumeQueue.multiDispatchLmqQueue``) with ``recheckReputOffsetFromCq=true``: the shapes of
tests/test_light_empty_restart_broker.py (``-cut``, ``-crash``) and tests/test_light_empty_reopen_broker.py
(``-later``), queues kept, restarted with ``DefaultMessageStore.doRecheckReputOffsetFromCq``'s second reput, which
starts at the largest ``getMaxPhysicOffset`` over the queue table after the recovery (topic "" queues the recovery's
dispatch reopened among them).

Each test first asserts what the broker wrote, the checks of those modules run on these stores (the topic "" files
and queue tables as without the setting), then ``verify`` of ``before/``: the second reput starts at or past every
empty-name record, so it puts nothing to topic "" and the prediction is the one without the setting
(:func:`store_format.empty_topic_restart.restart_refusal`).

By default 5.5.1's ``-crash`` (the recovery reopens topic "" queues 0 and 1 before the second reput);
``PIPELINES_FULL_SUITE=1`` adds 5.5.1's ``-cut`` and ``-later`` and 5.3.3's three.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
import test_light_empty_reopen_broker as reopen
import test_light_empty_restart_broker as restart

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


def recheck_scenarios(line: str) -> list[dict]:
    """``-cut``, ``-crash`` and ``-later`` of broker line ``line`` with ``recheckReputOffsetFromCq=true``."""
    shapes = [sc for sc in restart.restart_scenarios(line) if sc["name"].endswith(("-cut", "-crash"))] \
        + [sc for sc in reopen.reopen_scenarios(line) if sc["name"].endswith("-later")]
    return [{**sc, "name": f"{sc['name']}-recheck", "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}
            for sc in shapes]


SCENARIOS = {"5.5.1": bh.bounded(recheck_scenarios("5.5.1"), full_only=("-cut-recheck", "-later-recheck")),
             "5.3.3": bh.bounded(recheck_scenarios("5.3.3"), full_only=("-recheck",))}
KEPT, LATER = (bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
                                  if sc["name"].endswith(ends)], "PIPELINES_FULL_SUITE=1 writes these stores")
               for ends in (("-cut-recheck", "-crash-recheck"), ("-later-recheck",)))
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "file queue store(s) with topic \"\" files, restarted with a second reput", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _second_reput_is_on(written: dict) -> None:
    """The broker ran with the setting (its broker.conf, which ``verify`` read too) and ``verify`` predicted a
    restart."""
    d = Path(written["scenario"]["dir"])
    assert "recheckReputOffsetFromCq=true" in (d / "broker.conf").read_text().split(), (d / "broker.conf").read_text()
    assert written["verify"]["report"]["restart"] is not None, written["verify"]["stderr"]


@pytest.mark.parametrize("name", KEPT)
def test_the_second_reput_leaves_topic_empty_as_without_it(written, name):
    """``-cut``, ``-crash``: what the broker wrote is what it wrote without the setting (topic "" not loaded, its
    files as found, the crash walk reopening queues 0 and 1 with the same units), then ``verify`` predicts it so."""
    shape = name.removesuffix("-recheck")   # the checks of the shape without the setting
    restart.test_the_start_leaves_topic_empty_files_as_it_found_them(written, shape)
    _second_reput_is_on(written)
    restart.test_verify_predicts_topic_empty_as_the_broker_s_start_left_it(written, shape)


@pytest.mark.parametrize("name", LATER)
def test_the_second_reput_after_the_later_requests_puts_nothing_more(written, name):
    """``-later``: the broker's start put the later requests' units after blanks over the earlier ones, as without
    the setting; ``verify`` gives its figures."""
    _second_reput_is_on(written)
    reopen.test_a_start_dispatching_the_later_requests_blanks_the_earlier_units(written, name.removesuffix("-recheck"))
