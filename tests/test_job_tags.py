"""``stop_jobs`` (after a Ctrl-C) cancels the jobs of this job only: those tagged ``JOB_TAG``
(``run_tasks`` and the Delta writes tag them), not the other jobs of a shared context, such as a
notebook's own running in another thread."""
from __future__ import annotations

import threading
import time

import pytest

from pipelines.session import context_of, stop_jobs, tag_jobs

pytestmark = [pytest.mark.spark]


def _until(path: str):
    """A task that waits (at most two minutes) until ``path`` exists: both jobs run until the test says."""
    def wait(x: int) -> int:
        import os
        import time as t
        end = t.monotonic() + 120
        while not os.path.exists(path) and t.monotonic() < end:
            t.sleep(0.05)
        return x
    return wait


def test_stop_jobs_cancels_only_this_jobs_jobs(spark, tmp_path) -> None:
    from pipelines import session
    sc = context_of(spark)
    go = tmp_path / "go"
    outcome: dict[str, object] = {}

    def run(name: str, tagged: bool) -> None:
        if tagged:
            tag_jobs(sc)
        try:
            outcome[name] = sc.parallelize(range(1), 1).map(_until(str(go))).collect()
        except Exception as e:  # the cancelled one
            outcome[name] = e

    threads = [threading.Thread(target=run, args=(name, name == "ours")) for name in ("ours", "notebook")]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(sc.statusTracker().getActiveJobsIds()) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(sc.statusTracker().getActiveJobsIds()) == 2, "both jobs should be running"
    try:
        stop_jobs(spark, patience=0.5)
    finally:
        go.touch()
        session._jvm_stderr_muted.clear()   # stop_jobs muted the session's JVM for good: the suite goes on
    for t in threads:
        t.join(150)
    assert isinstance(outcome["ours"], Exception), f"the tagged job was not cancelled: {outcome['ours']!r}"
    assert "cancel" in str(outcome["ours"]).lower(), outcome["ours"]
    assert outcome["notebook"] == [0], f"the untagged job did not finish: {outcome['notebook']!r}"
