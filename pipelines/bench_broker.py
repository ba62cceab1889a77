"""The benchmark's bar: the broker's own rebuild of the bench store, timed in the same run.

RocketMQ's published store code (the broker harness of ``tests/broker``, built by ``make harness``)
opens the bench store's ``commitlog/`` with ``consumequeue/``, ``index/`` and the checkpoint absent
(``harness.RebuildTimer``): ``DefaultMessageStore.load`` (the commitlog's recovery; on 5.x also its
own dispatch of what the missing queues lack) and ``start`` (the reput thread), until the reput has
caught up with the commitlog's max offset: "load + dispatch", single-threaded as on a restart.  What
the broker writes goes to a scratch folder, deleted afterwards; the commitlog is only read.

The JVM runs with a heap of 2 GiB and G1 (the broker's ``runbroker.sh`` gives 8 GiB, which the
reput does not use: its files are mapped, not on the heap); the JVM's own start is not counted.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["BrokerTiming", "time_broker_rebuild", "BROKER_LINE"]

BROKER_LINE = "4.9.8"
_HARNESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "broker")
_JVM = ["-Xms2g", "-Xmx2g", "-XX:+UseG1GC",
        "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
        "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED"]


@dataclass
class BrokerTiming:
    """One timed broker rebuild, or why there is none (``seconds`` None, ``why`` set)."""
    line: str
    seconds: float | None = None
    load_seconds: float | None = None
    dispatch_seconds: float | None = None
    why: str = ""


def time_broker_rebuild(store_root: str, scratch: str, settings: dict[str, str],
                        line: str = BROKER_LINE, timeout: float = 3600) -> BrokerTiming:
    """The broker ``line``'s load + dispatch of ``store_root``'s commitlog (module docstring)."""
    target = os.path.join(_HARNESS, f"rmq-{line}", "target")
    classpath_file = os.path.join(target, "classpath.txt")
    if shutil.which("java") is None:
        return BrokerTiming(line, why="no java on PATH")
    if not (os.path.isfile(classpath_file)
            and os.path.isfile(os.path.join(target, "classes", "harness", "RebuildTimer.class"))):
        return BrokerTiming(line, why=f"the broker harness for {line} is not built (make harness)")
    with open(classpath_file) as f:
        classpath = os.pathsep.join([os.path.join(target, "classes"), f.read().strip()])
    cmd = ["java", *_JVM, "-cp", classpath, "harness.RebuildTimer", os.path.join(store_root, "commitlog"), scratch,
           *(f"{k}={v}" for k, v in settings.items())]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        shutil.rmtree(scratch, ignore_errors=True)
        return BrokerTiming(line, why=f"the broker did not finish within {timeout:.0f} s")
    rows = [json.loads(s) for s in proc.stdout.splitlines() if s.startswith("{")]
    if proc.returncode != 0 or not rows:
        shutil.rmtree(scratch, ignore_errors=True)
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return BrokerTiming(line, why=f"the broker's rebuild failed (exit {proc.returncode}): {tail}")
    r = rows[-1]
    return BrokerTiming(line, seconds=r["loadSeconds"] + r["dispatchSeconds"], load_seconds=r["loadSeconds"],
                        dispatch_seconds=r["dispatchSeconds"])
