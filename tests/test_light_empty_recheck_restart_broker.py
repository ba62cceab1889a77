"""``rebuild --as-restart`` with ``recheckReputOffsetFromCq=true`` over topic ""'s consume queue files
(``consumequeue/<queueId>/<file>``: multi-dispatch requests naming an empty queue, ``ConsumeQueue.
multiDispatchLmqQueue``): tests/test_light_empty_reopen_broker.py's ``-planted`` store (the queue folders deleted,
files planted in ``consumequeue/0/`` and ``consumequeue/1/``, the third request's record damaged so that the
recovery cuts before it) restarted with ``DefaultMessageStore.doRecheckReputOffsetFromCq``'s second reput, which
starts at the largest ``getMaxPhysicOffset`` over the queue table after the recovery: every empty-name record is
queued (its own topic's unit ends where its topic "" unit does), so that start lies past each one the recovery
dispatched and the second reput puts nothing to topic "" (``-planted-recheck``, a clean start: ``recoverNormally``;
``-planted-crash-recheck``, an abort file: ``recoverAbnormally``'s walk).

Each test first asserts what the broker wrote (the setting on, the planted bytes under the units the recovery put:
the checks of the ``-planted`` shape), then our ``rebuild --as-restart`` of the store as the start found it, byte
for byte (:func:`pipelines.restart_topic_empty.topic_empty_over_held`).  Then the refusal that remains: a second
reput that dispatches an empty-name record the recovery dispatched again, over held topic "" files
(:func:`store_format.empty_topic_restart.reput_again_queues`), exit 2 in one line.  No file queue store reaches it
(the start above), so the test moves the plan's second reput back to the first request's record.

By default 5.5.1's ``-planted-recheck``; ``PIPELINES_FULL_SUITE=1`` adds 5.5.1's ``-planted-crash-recheck`` and
5.3.3's two.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import broker_harness as bh
import pytest
import test_light_empty_reopen_broker as reopen

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


def recheck_scenarios(line: str) -> list[dict]:
    """``-planted`` of broker line ``line``, clean and after a crash, with ``recheckReputOffsetFromCq=true``."""
    planted = next(sc for sc in reopen.reopen_scenarios(line) if sc["name"].endswith("-planted"))
    config = {**planted["config"], "recheckReputOffsetFromCq": "true"}
    return [{**planted, "name": f"{planted['name']}-recheck", "config": config},
            {**planted, "name": f"{planted['name']}-crash-recheck", "config": config, "abort": True}]


SCENARIOS = {"5.5.1": bh.bounded(recheck_scenarios("5.5.1"), full_only=("-crash-recheck",)),
             "5.3.3": bh.bounded(recheck_scenarios("5.3.3"), full_only=("-recheck",))}
CASES = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs],
                          "PIPELINES_FULL_SUITE=1 writes these stores")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "file queue store(s) with planted topic \"\" files, restarted with a second reput",
                   threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our
    ``rebuild --as-restart`` of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _setting_on(written: dict) -> None:
    """The broker ran with the setting (its broker.conf, which our rebuild read too), after a crash where asked."""
    d = Path(written["scenario"]["dir"])
    assert "recheckReputOffsetFromCq=true" in (d / "broker.conf").read_text().split(), (d / "broker.conf").read_text()
    assert (d / "before" / "abort").is_file() == bool(written["scenario"].get("abort"))


@pytest.mark.parametrize("name", CASES)
def test_as_restart_writes_the_second_reput_s_start_over_planted_files(written, name):
    """What the broker wrote: the setting on, then the ``-planted`` checks (topic "" queue 1's file the first
    request's unit over the planted bytes, queue 0's put 4's after ``fillPreBlank``'s blanks, both grown to the file
    size, queue 1's second file as planted: the second reput put nothing more), then our ``rebuild --as-restart``:
    every consume queue and index file the broker's, byte for byte."""
    _setting_on(written)
    reopen.test_as_restart_writes_the_start_s_units_over_planted_files(written, name)


@pytest.mark.parametrize("name", CASES[:1])
def test_a_second_reput_dispatching_an_empty_name_record_again_is_refused(written, name, monkeypatch, tmp_path):
    """The refusal left: held topic "" files and a second reput that dispatches an empty-name record the recovery
    dispatched again (where ``truncateDirtyLogicFiles`` read past the written bytes sets where it puts).  The
    broker's start begins past them (the test above), so the plan's second reput is moved back to the first
    request's record: ``rebuild --as-restart`` exits 2 with one line naming topic "" queues 0 and 1 (both
    requests before the cut dispatched again), and writes nothing."""
    import pipelines.restart as restart
    _setting_on(written)
    d = Path(written["scenario"]["dir"])
    first = reopen._requests(d)[0]
    real = restart.plan_recovery

    def moved(st, config):   # noqa: ANN001, ANN202
        p = real(st, config)
        assert p.restart_reput_from > first, p   # the broker's start: past every empty-name record
        return dataclasses.replace(p, restart_reput_from=first)

    monkeypatch.setattr(restart, "plan_recovery", moved)
    out = tmp_path / "ours"
    code, _, err = bh.cli(["rebuild", "--store", str(d / "before"), "--out", str(out), "--as-restart", "--config",
                           str(d / "broker.conf"), "--broker-version", bh.BROKER_VERSION_ARG[written["line"]],
                           "--split-size", "4k", "--no-tables"])
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(lines) == 1, err[-2000:]
    assert "second reput dispatches records of queue(s) 0, 1 again" in lines[0], lines
    assert not (out / "consumequeue").exists(), sorted(out.rglob("*"))
