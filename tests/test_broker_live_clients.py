"""A live broker with real clients: what it writes, the rebuild writes byte for byte.

``tests/live/`` holds one small Java program (``live.LiveBroker``) built once per broker line against
RocketMQ's published jars.  In one JVM it starts a name server and a broker on the loopback interface
and drives them with the published client: ordinary, delayed and batched messages with tags and keys,
transactions committed, rolled back and resolved by the broker's check-back, and a consumer group
that fails some messages through its retry topic into its dead-letter queue.  So the store holds what
only a live broker writes: ``SCHEDULE_TOPIC_XXXX`` and its redelivery, the transaction half and op
topics, ``%RETRY%`` and ``%DLQ%`` topics.  The broker is shut down cleanly; its ``consumequeue/`` and
``index/`` are kept as the expected files, and the rebuild from ``commitlog/`` and ``broker.conf``
alone must equal them: the same consume queue paths and bytes, the index files in name order.

The JVM runs in a network namespace of its own (``unshare -n``) holding only a loopback interface:
the 4.9 broker binds every interface it has, and there it has no other.  Servers end with the JVM,
which the test kills on a timeout.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from store_format.config import load_broker_config
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.broker]

LIVE = REPO_ROOT / "tests" / "live"
# the 4.x module runs the 4.9.7 broker and name server over the 4.9.8 store and client (the 4.9.8
# broker is not on Maven Central); 5.5.1, the newest line, runs its own broker and store with the 5.5.0
# name server and client (5.5.1 publishes no name server or client); 5.5.0, whose jars are all published,
# with PIPELINES_FULL_SUITE=1 (its store code is 5.5.1's for what the test writes)
LINES = {"4.9.8": "4", "5.5.0": "5.5", "5.5.1": "5.5"}
DEFAULT_LINES = ("4.9.8", "5.5.1")
JVM_OPTIONS = ["-Xmx512m", "-XX:+UseSerialGC",
               "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
               "--add-opens", "java.base/java.lang=ALL-UNNAMED",
               "--add-exports", "java.base/jdk.internal.ref=ALL-UNNAMED",
               "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED"]
MESSAGES = 400
# reviveQueueNum=1: the 5.x broker's shutdown stops its pop revive services one by one, each up to 4 s
# into a scan of its queue (PopReviveService.consumeReviveMessage); nothing here pops
TIME_LIMIT_S = 150

BROKER_CONF = """\
brokerClusterName=LiveCluster
brokerName=live-broker
brokerId=0
flushDiskType=ASYNC_FLUSH
mappedFileSizeCommitLog=262144
mappedFileSizeConsumeQueue=1200
maxHashSlotNum=100
maxIndexNum=400
messageDelayLevel=1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s
transactionCheckInterval=1000
transactionTimeOut=1000
reviveQueueNum=1
"""


def _classpath(line: str) -> str:
    module = LIVE / f"rmq-{line}"
    listed = module / "target" / "classpath.txt"
    if not listed.exists():
        if shutil.which("mvn") is None:
            pytest.skip("no Maven on PATH: the live-broker test needs RocketMQ's published jars (run make test)")
        built = subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-o", "package", "-f", str(LIVE / "pom.xml")],
                               capture_output=True, text=True)
        if built.returncode != 0:
            pytest.fail(f"building tests/live failed (make test resolves its jars first):\n{built.stdout[-3000:]}")
    return f"{module / 'target' / 'classes'}{os.pathsep}{listed.read_text().strip()}"


def _run_live_broker(line: str, root: Path) -> str:
    """The JVM in a fresh network namespace with only loopback; returns its stdout."""
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: the live-broker test runs RocketMQ's broker")
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no network namespace here (unshare -n: {probe.stderr.strip()}): the live broker must "
                    "not listen beyond loopback")
    java = ["java", *JVM_OPTIONS, "-cp", _classpath(line), "live.LiveBroker", str(root / "broker.conf"),
            str(root), str(MESSAGES), "7", str(TIME_LIMIT_S)]
    script = 'ip link set lo up && exec "$@"'
    try:
        done = subprocess.run(["unshare", "-n", "sh", "-c", script, "sh", *java], capture_output=True, text=True,
                              timeout=TIME_LIMIT_S + 60)
    except subprocess.TimeoutExpired as e:  # the JVM is killed with its namespace's last process
        pytest.fail(f"the live broker did not finish in {TIME_LIMIT_S + 60} s:\n{(e.stdout or b'')[-2000:]!r}")
    assert done.returncode == 0 and "done=1" in done.stdout, (
        f"live broker run failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _lines() -> list[str]:
    if os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0"):
        return sorted(LINES)
    return list(DEFAULT_LINES)


@pytest.mark.parametrize("line", _lines())
def test_rebuild_equals_what_a_live_broker_wrote(spark, tmp_path: Path, line: str) -> None:
    from pipelines.rebuild import run_rebuild

    (tmp_path / "broker.conf").write_text(BROKER_CONF)
    counts = dict(row.split("=", 1) for row in _run_live_broker(line, tmp_path).splitlines() if "=" in row)
    store = tmp_path / "store"
    expected = tmp_path / "expected"
    expected.mkdir()
    for part in ("consumequeue", "index"):
        shutil.move(str(store / part), str(expected / part))
    written = _files(expected / "consumequeue")
    # what the run must have exercised, or the comparison proves little
    for topic in ("LiveTopic", "LiveTxTopic", "SCHEDULE_TOPIC_XXXX", "%RETRY%LiveGroup", "%DLQ%LiveGroup",
                  "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"):
        assert any(path.startswith(topic + "/") for path in written), f"the live run wrote no {topic} queue"
    assert int(counts["failing"]) > 0 and int(counts["tx_committed"]) > 0
    assert len(list((store / "commitlog").iterdir())) >= 2, "the commitlog did not roll over"
    assert len(list((expected / "index").iterdir())) >= 2, "the index did not roll over"

    config = load_broker_config(BROKER_CONF, brokerVersion=LINES[line])
    out = tmp_path / "out"
    run_rebuild(str(store), str(out), config, spark=spark, split_size=64 * 1024)

    rebuilt = _files(out / "consumequeue")
    assert sorted(rebuilt) == sorted(written)
    differing = [path for path in written if rebuilt[path] != written[path]]
    assert not differing, f"consume queue files differ from the live broker's: {differing}"
    ours = [p.read_bytes() for p in sorted((out / "index").iterdir())]
    theirs = [p.read_bytes() for p in sorted((expected / "index").iterdir())]
    assert len(ours) == len(theirs), f"{len(ours)} index files rebuilt, the live broker wrote {len(theirs)}"
    differing_index = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    assert not differing_index, f"index files (in name order) that differ: {differing_index}"
