"""A broker that may be running on the store (its ``lock`` held, or ``abort`` present): ``verify``,
``dump``, ``tables`` and ``rebuild`` warn, and refuse with ``--strict`` (pipelines.brokerlock).

The lock is held the way the broker's ``FileChannel.tryLock(0, 1, false)`` holds it on Linux: a
POSIX record lock on byte 0, from another process (tests/test_verify.py holds it from a real JVM)."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.cli import main

HOLDER = ("import fcntl, sys\n"
          "f = open(sys.argv[1], 'r+b')\n"
          "fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\n"
          "print('locked', flush=True)\n"
          "sys.stdin.read()\n")


@pytest.fixture()
def store(small_store: Path) -> Path:
    return small_store


@pytest.fixture()
def held_lock(store: Path) -> Iterator[int]:
    """Another process holds the broker's lock on STORE/lock; yields its pid."""
    (store / "lock").write_bytes(b"")
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(store / "lock")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _segment(store: Path) -> str:
    return str(sorted((store / "commitlog").iterdir())[0])


def test_verify_warns_while_the_lock_is_held(store: Path, held_lock: int, tmp_path: Path, capsys) -> None:
    code = main(["verify", "--store", str(store), "--config", str(store / "broker.conf"), "--engine", "local",
                 "--work", str(tmp_path / "work")])
    assert code in (0, 1)
    err = capsys.readouterr().err
    warning = [ln for ln in err.splitlines() if "warning: a broker may be running" in ln]
    assert len(warning) == 1 and f"process {held_lock} holds the lock" in warning[0], err
    assert "writes in progress" in warning[0]


def test_verify_strict_refuses_while_the_lock_is_held(store: Path, held_lock: int, tmp_path: Path, capsys) -> None:
    code = main(["verify", "--store", str(store), "--config", str(store / "broker.conf"), "--engine", "local",
                 "--work", str(tmp_path / "work"), "--strict"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and f"process {held_lock}" in err[0], err
    assert not (tmp_path / "work").exists()


def test_dump_warns_when_abort_exists_and_strict_refuses(store: Path, capsys) -> None:
    (store / "abort").write_text("999999999")
    assert main(["dump", _segment(store), "--count", "1", "--config", str(store / "broker.conf")]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip()
    assert f"{store}/abort exists" in captured.err and "half-written" in captured.err, captured.err
    assert main(["dump", _segment(store), "--count", "1", "--strict"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: ") and len(captured.err.splitlines()) == 1


def test_dump_of_a_quiet_store_has_no_warning(store: Path, capsys) -> None:
    (store / "lock").write_bytes(b"")   # a stopped broker leaves its lock file, unlocked
    assert main(["dump", _segment(store), "--count", "1", "--strict"]) == 0
    assert "broker" not in capsys.readouterr().err


def test_tables_strict_refuses_before_any_work(store: Path, held_lock: int, tmp_path: Path, capsys) -> None:
    code = main(["tables", "--store", str(store), "--tables", str(tmp_path / "tables"), "--strict"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"process {held_lock} holds the lock" in err[0], err
    assert not (tmp_path / "tables").exists()


def test_rebuild_warns_on_a_held_lock_and_strict_refuses(store: Path, held_lock: int, tmp_path: Path,
                                                         capsys) -> None:
    base = ["rebuild", "--store", str(store), "--config", str(store / "broker.conf"), "--engine", "local",
            "--processes", "1"]
    assert main([*base, "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert f"process {held_lock} holds the lock" in err and "change under the scan" in err, err
    assert main([*base, "--out", str(tmp_path / "out2"), "--strict"]) == 2
    err2 = capsys.readouterr().err.strip().splitlines()
    assert len(err2) == 1 and err2[0].startswith("error: ") and "--strict" in err2[0], err2
    assert not (tmp_path / "out2").exists()
