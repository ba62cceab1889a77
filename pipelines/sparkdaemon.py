"""Spark's Python daemon for local sessions, started while the JVM starts and with the kernels loaded.

Spark starts its Python daemon (``spark.python.daemon.module``, here this module) only when the
first Python task runs, and every worker it forks would import numba and load the compiled kernels
first: about a second before the first task of a job can begin, after the JVM's own start-up.

:func:`pipelines.spare.start_spare` therefore starts a *spare* daemon process next to the JVM, which the session
builder starts at the same time (the JVM keeps one of two cores busy while it starts).  The spare
imports PySpark's daemon and the pipeline's task modules, loads the kernels (a tiny rebuild in
process: :func:`pipelines.warm.rehearse`), and waits on a Unix
socket in a private folder.  When Spark later runs ``python -m pipelines.sparkdaemon``, that small
process hands its standard streams, arguments, environment (the worker secret among them) and
working folder over the socket to the spare (``SCM_RIGHTS``), which then runs PySpark's own
``daemon.manager()`` on them: Spark talks to a daemon that is already warm.  The small process stays
as the one Spark knows: a SIGTERM from Spark is passed on, and it exits when the spare does.

Whenever there is no spare (a cluster, a second daemon after a failure, a spare that has gone), the
module is an ordinary daemon that loads the kernels itself before it forks workers.
"""
from __future__ import annotations

import os
import pickle
import signal
import socket
import sys

from .pyspark_private import daemon_exit_code, daemon_manager, load_daemon, quiet_peer_gone
from .spare import SPARE_ENV

__all__: list[str] = []

_FDS = (0, 1, 2)


def _serve_spare(path: str, fd: int) -> None:
    """Spare: warm up, wait for one daemon launch by Spark, then become that daemon.  A launch that
    comes during the warm-up waits in the socket's backlog."""
    # like the daemon Spark starts (from a JVM that ignores SIGINT, in a process group it makes its
    # own): a Ctrl-C at the terminal is the driver's to handle, not the daemon's in mid-work
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.setpgid(0, 0)
    listener = socket.socket(fileno=fd)
    _warm_up_politely()
    try:
        conn = _accept_or_orphaned(listener)
    finally:
        listener.close()
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
    if conn is None:
        os._exit(0)
    msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, len(_FDS))
    launch = pickle.loads(msg)
    for fd, target in zip(fds, _FDS):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(launch["env"])
    os.chdir(launch["cwd"])
    sys.argv = [sys.argv[0], *launch["args"]]
    conn.sendall(str(os.getpid()).encode())
    # ``conn`` stays open: the launcher waits for it to close (this process and its workers gone)
    _run_manager()


def _warm_up_politely(niceness: int = 10) -> None:
    """Import the task modules and load every kernel with the argument types of the tasks
    (:func:`pipelines.warm.rehearse`), in a thread of lower priority: the JVM starting beside it, and
    the driver planning, come first (nice values belong to threads on Linux).  The workers are later
    forked from the main thread, at the process's own priority."""
    import threading

    def warm() -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + niceness)
        except (OSError, AttributeError):
            pass
        from pipelines.warm import rehearse
        load_daemon()
        rehearse()

    thread = threading.Thread(target=warm, name="warm-up")
    thread.start()
    thread.join()


def _accept_or_orphaned(listener: socket.socket) -> socket.socket | None:
    """The launcher's connection, or None once the driver that started the spare has gone."""
    import select

    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if listener in ready:
            return listener.accept()[0]
        if not os.read(sys.stdin.fileno(), 1):
            return None


def _hand_over(path: str) -> bool:
    """Launched by Spark: give this launch to the spare; False when there is none."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
    except OSError:
        return False
    launch = {"env": dict(os.environ), "cwd": os.getcwd(), "args": sys.argv[1:]}
    socket.send_fds(conn, [pickle.dumps(launch)], list(_FDS))
    pid = int(conn.recv(32) or b"0")
    if not pid:
        return False
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in _FDS:   # the spare holds Spark's pipes now; do not keep them open after it is gone
        os.dup2(devnull, fd)
    while True:
        try:
            if not conn.recv(1):
                break
        except InterruptedError:
            continue
    return True


def _freeze_loaded_objects() -> None:
    """Move every object loaded so far (modules, kernels, their caches: hundreds of thousands) out of
    the garbage collector's sight.  PySpark's daemon runs a full ``gc.collect()`` in a reused worker
    after each task, before the worker takes its next one: over all of that it took 60-90 ms a task
    (measured: task turnaround 80 ms -> a few ms).  The workers forked afterwards inherit the frozen
    objects, which also keeps the collector from touching (and so copying) their shared pages."""
    import gc
    gc.collect()
    gc.freeze()


def _run_manager() -> None:
    quiet_peer_gone()
    _freeze_loaded_objects()
    try:
        daemon_manager()
    except SystemExit as stop:
        sys.stdout.flush()
        os._exit(daemon_exit_code(stop.code))


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--spare":
        _serve_spare(sys.argv[2], int(sys.argv[3]))
    else:
        spare = os.environ.pop(SPARE_ENV, None)
        if spare and _hand_over(spare):
            sys.exit(0)
        from store_format.warmup import warm_up
        load_daemon()
        warm_up()
        _run_manager()
