"""One run per output at a time (pipelines.outlock): a second run refuses at once, ``--overwrite``
included; the lock of a run that died is taken over with a line; nothing is left behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.outlock import OutputInUseError, OutputLock, lock_path

# another process takes the lock exactly as a run does, says so, and waits to be stopped
HOLDER = ("import sys\n"
          "from pipelines.outlock import OutputLock\n"
          "lock = OutputLock(sys.argv[1], sys.argv[2], 'test holder').acquire()\n"
          "print('locked', flush=True)\n"
          "sys.stdin.read()\n"
          "lock.release()\n")


@pytest.fixture()
def store(small_store: Path) -> Path:
    return small_store


def _hold(target: Path, option: str) -> subprocess.Popen:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(target), option], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=root,
                            env=dict(os.environ, PYTHONPATH=str(root)))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.fixture()
def holder(request) -> Iterator[list[subprocess.Popen]]:
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _rebuild(store: Path, out: Path, *extra: str) -> list[str]:
    return ["rebuild", "--store", str(store), "--config", str(store / "broker.conf"), "--engine", "local",
            "--processes", "1", "--out", str(out), *extra]


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_second_rebuild_into_the_same_out_refuses_at_once(store, tmp_path, capsys, holder, overwrite) -> None:
    out = tmp_path / "out"
    holder.append(_hold(out, "--out"))
    assert main(_rebuild(store, out, *overwrite)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --out {out} is in use by another run: pid {holder[0].pid}")
    assert not out.exists()   # no work done: nothing staged


def test_a_rebuild_leaves_no_lock_behind_and_a_later_one_runs(store, tmp_path) -> None:
    out = tmp_path / "out"
    assert main(_rebuild(store, out)) == 0
    assert not Path(lock_path(str(out))).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "store"]
    assert main(_rebuild(store, out, "--overwrite")) == 0


def test_the_lock_of_a_killed_run_is_taken_over_with_a_line(store, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    dead = _hold(out, "--out")
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    left = Path(lock_path(str(out)))
    assert json.loads(left.read_text())["pid"] == dead.pid   # what a killed run leaves
    assert main(_rebuild(store, out)) == 0
    err = capsys.readouterr().err
    assert f"took over the lock of a run that is gone (pid {dead.pid}" in err, err
    assert not left.exists()


def test_tables_lock_refuses_a_second_refresh_before_any_work(store, tmp_path, capsys, holder) -> None:
    tables = tmp_path / "tables"
    holder.append(_hold(tables, "--tables"))
    with pytest.raises(OutputInUseError, match=f"pid {holder[0].pid}"):
        OutputLock(str(tables), "--tables", "test").acquire()
    # the command refuses before it starts Spark
    assert main(["tables", "--store", str(store), "--tables", str(tables)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is in use by another run" in err[0], err


def test_lock_parents_made_for_it_are_removed(tmp_path) -> None:
    target = tmp_path / "a" / "b" / "out"
    lock = OutputLock(str(target), "--out", "test").acquire()
    assert Path(lock_path(str(target))).exists()
    lock.release()
    assert list(tmp_path.iterdir()) == []
