"""The warm spare Python daemon of local sessions (:mod:`pipelines.sparkdaemon`)."""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

from pipelines.spare import SPARE_ENV, start_spare

ROOT = Path(__file__).resolve().parent.parent


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "--spare" not in _cmdline(pid) and "pipelines.sparkdaemon" not in _cmdline(pid):
            return True
        time.sleep(0.05)
    return False


def _launch_like_spark(env: dict) -> subprocess.Popen:
    """What Spark's PythonWorkerFactory does: ``python -m <daemon module> pyspark.worker`` with pipes."""
    return subprocess.Popen([sys.executable, "-m", "pipelines.sparkdaemon", "pyspark.worker"], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _port(proc: subprocess.Popen) -> int:
    assert proc.stdout is not None
    return struct.unpack(">i", proc.stdout.read(4))[0]


def _listener_pid(port: int) -> int | None:
    """The process that listens on 127.0.0.1:port (from /proc/net/tcp and the processes' sockets)."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[1].endswith(f":{port:04X}") and f[3] == "0A":
            inode = f[9]
    if inode is None:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) == f"socket:[{inode}]":
                    return int(proc.name)
        except OSError:
            continue
    return None


def test_the_daemon_spark_launches_is_the_spare(monkeypatch) -> None:
    """The launched process hands Spark's pipes to the warm spare, which listens for workers; a
    SIGTERM from Spark reaches it, and both are gone afterwards with their socket folder."""
    monkeypatch.delenv(SPARE_ENV, raising=False)
    spare = start_spare()
    assert spare is not None
    path = os.environ[SPARE_ENV]
    env = dict(os.environ, PYTHON_WORKER_FACTORY_SECRET="s3cret", PYTHONPATH=str(ROOT))
    launched = _launch_like_spark(env)
    try:
        port = _port(launched)
        assert 0 < port < 65536
        assert _listener_pid(port) == spare.pid          # workers are forked from the warm spare
        assert not os.path.exists(path)                   # the socket is used once and removed
        launched.send_signal(signal.SIGTERM)              # how Spark stops its daemon
        assert launched.wait(20) == 0
        assert spare.wait(20) is not None
        assert not os.path.exists(os.path.dirname(path))
    finally:
        for p in (launched, spare):
            if p.poll() is None:
                p.kill()


def test_without_a_spare_the_module_is_an_ordinary_daemon(tmp_path) -> None:
    env = dict(os.environ, PYTHON_WORKER_FACTORY_SECRET="s3cret", PYTHONPATH=str(ROOT))
    env[SPARE_ENV] = str(tmp_path / "no-such.sock")
    launched = _launch_like_spark(env)
    try:
        port = _port(launched)
        assert _listener_pid(port) == launched.pid
        assert launched.stdin is not None
        launched.stdin.close()                            # Spark gone: the daemon ends
        launched.wait(20)
    finally:
        if launched.poll() is None:
            launched.kill()


def test_an_unused_spare_ends_with_the_driver(tmp_path) -> None:
    code = ("import os, sys; from pipelines.spare import start_spare, SPARE_ENV; p = start_spare(); "
            "print(p.pid, os.environ[SPARE_ENV], flush=True)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    pid, path = out.stdout.split()
    assert _gone(int(pid))
    deadline = time.monotonic() + 10
    while os.path.exists(os.path.dirname(path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(os.path.dirname(path))


def test_the_session_s_first_daemon_is_the_spare(spark) -> None:
    """The tests' own local session: its spare (a child of this process) was handed Spark's first
    daemon launch (its socket is gone) and serves as that daemon.  (Later daemons of a session, such
    as the one Spark starts for Arrow UDFs with their own environment, start ordinarily.)"""
    assert spark.sparkContext.parallelize(range(2), 2).map(lambda _: os.getppid()).collect()
    spares = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and "--spare" in _cmdline(int(proc.name)):
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == os.getpid():
                spares.append(_cmdline(int(proc.name)))
    assert spares, "no spare daemon was started with the session"
    assert any(not os.path.exists(cmd[cmd.index("--spare") + 1]) for cmd in spares), spares


def test_workers_leave_the_loaded_modules_to_a_frozen_gc_and_talk_over_unix_sockets(spark) -> None:
    """The two per-task costs of a reused Python worker: PySpark's daemon collects garbage after
    each task (so what was loaded before the fork must be frozen, out of the collector's sight), and
    over local TCP a task's data waits for the worker's delayed ACK (so the JVM uses Unix sockets)."""
    def worker_facts(_: int) -> list[tuple[int, str]]:
        import gc
        import os
        return [(gc.get_freeze_count(), os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED", "unset").lower())]

    facts = spark.sparkContext.parallelize(range(2), 2).flatMap(worker_facts).collect()
    assert facts and all(frozen > 10_000 for frozen, _ in facts), facts   # numba, pyarrow, the kernels
    assert all(unix == "true" for _, unix in facts), facts
