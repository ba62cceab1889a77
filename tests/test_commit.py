"""Crash safety of the commit (pipelines.commit.StagedOutput).

The commit runs in a child process that SIGKILLs itself after a named step (the test hook
``ROCKETMQ_REBUILD_KILL_AT``); the test then checks what an operator would find in OUT, and that the
next StagedOutput on OUT completes (or rolls back) the commit and leaves no debris.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipelines.commit import KILL_AT_ENV, StagedOutput
from pipelines.commit.outroot import OutputRoot
from store_format.errors import StoreLayoutError

REPO = Path(__file__).resolve().parents[1]

OLD = {
    "consumequeue/TopicA/0/00000000000000000000": b"old-a0" * 10,
    "consumequeue/TopicB/1/00000000000000000000": b"old-b1" * 7,
    "index/20240101000000000": b"old-index" * 5,
}
NEW = {
    "consumequeue/TopicA/0/00000000000000000000": b"new-a0" * 11,
    "consumequeue/TopicC/3/00000000000000006000": b"new-c3" * 3,
    "index/20240202000000000": b"new-index-1" * 4,
    "index/20240202000000001": b"new-index-2" * 4,
}

# the child: prepare, write NEW into the staging folder, commit (killed by the hook where asked)
CHILD = textwrap.dedent("""
    import json, os, sys, time
    from pipelines.commit import StagedOutput
    out, run_id, mode, files, action = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5]
    staged = StagedOutput(out, run_id, overwrite=True)
    if mode == "copy":
        staged.target.atomic_rename = False  # move folders as object stores do: copy, then delete
    if mode == "record":
        staged.target.local = False     # no flock: liveness from the owner record, as on HDFS or S3
    if action == "recover":
        staged.check_target()
        sys.exit(0)
    staged.prepare()
    for rel, text in files.items():
        path = os.path.join(staged.staging_path, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(text.encode("latin-1"))
    os.makedirs(os.path.join(staged.staging_path, "_work"), exist_ok=True)
    if action == "die":
        os.kill(os.getpid(), 9)
    if action == "forkdie":   # a worker forked by the run outlives it (the local engine's pool)
        child = os.fork()
        if child == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):   # let the test read the parent's output to its end
                os.dup2(devnull, fd)
            time.sleep(60)
            os._exit(0)
        print(child, flush=True)
        os.kill(os.getpid(), 9)
    if action == "wait":
        print("ready", flush=True)
        sys.stdin.read()
        sys.exit(0)
    staged.commit()
""")


def _child(out: Path, run_id: str, *, mode: str = "rename", action: str = "commit", kill_at: str | None = None,
           files: dict[str, bytes] = NEW) -> subprocess.CompletedProcess:
    import json
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(KILL_AT_ENV, None)
    if kill_at:
        env[KILL_AT_ENV] = kill_at
    payload = json.dumps({k: v.decode("latin-1") for k, v in files.items()})
    return subprocess.run([sys.executable, "-c", CHILD, str(out), run_id, mode, payload, action], env=env,
                          capture_output=True, text=True, timeout=120)


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _outputs(out: Path) -> dict[str, bytes] | None:
    """Every file under OUT/consumequeue and OUT/index, or None when either folder is missing."""
    if not (out / "consumequeue").is_dir() or not (out / "index").is_dir():
        return None
    files = {}
    for name in ("consumequeue", "index"):
        for path in sorted((out / name).rglob("*")):
            if path.is_file():
                files[path.relative_to(out).as_posix()] = path.read_bytes()
    return files


def _debris(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".rebuild-"))


def _kill_points(n_moves: int, mode: str) -> list[str]:
    points = ["commit:synced", "commit:journal"]
    for k in range(1, n_moves + 1):
        if mode == "copy":
            points.append(f"commit:copy-{k}")
        points.append(f"commit:move-{k}")
    return points + ["commit:moved", "commit:cleaned"]


CASES = ([("rename", True, p) for p in _kill_points(4, "rename")]
         + [("rename", False, p) for p in _kill_points(2, "rename")]
         + [("copy", True, p) for p in _kill_points(4, "copy")])


@pytest.mark.parametrize("mode, with_old, kill_at", CASES)
def test_a_commit_killed_at_any_step_is_completed_by_the_next_run(tmp_path, caplog, mode, with_old, kill_at):
    out = tmp_path / "out"
    out.mkdir()
    if with_old:
        _write(out, OLD)
    before = _outputs(out)
    killed = _child(out, "run1", mode=mode, kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr  # the kill point was reached
    plan = out / ".rebuild-commit-run1.json"
    now = _outputs(out)
    # what an operator finds: the complete old or new pair, or a journal saying OUT is mid-commit
    assert now in (before, NEW) or plan.exists(), (kill_at, _debris(out))
    with caplog.at_level(logging.INFO, logger="pipelines.commit"):
        StagedOutput(str(out), "run2", overwrite=True).check_target()
    expected = before if kill_at == "commit:synced" else NEW
    assert _outputs(out) == expected
    assert _debris(out) == []
    said = caplog.text
    if kill_at == "commit:synced":
        assert "removed stale staging folder .rebuild-staging-run1" in said
    else:
        assert "interrupted commit of run run1" in said


@pytest.mark.parametrize("mode, first, second", [
    ("rename", "commit:move-1", "recover:move-3"),
    ("rename", "commit:move-3", "recover:cleaned"),
    ("copy", "commit:copy-2", "recover:copy-3"),
    ("copy", "commit:move-1", "recover:move-2"),
])
def test_a_recovery_killed_half_way_is_completed_by_the_next(tmp_path, mode, first, second):
    out = tmp_path / "out"
    out.mkdir()
    _write(out, OLD)
    assert _child(out, "run1", mode=mode, kill_at=first).returncode == -signal.SIGKILL
    again = _child(out, "run2", mode=mode, action="recover", kill_at=second)
    assert again.returncode == -signal.SIGKILL, again.stderr
    StagedOutput(str(out), "run3", overwrite=True).check_target()
    assert _outputs(out) == NEW
    assert _debris(out) == []


def test_a_commit_whose_staged_files_vanished_is_rolled_back(tmp_path, caplog):
    out = tmp_path / "out"
    out.mkdir()
    _write(out, OLD)
    assert _child(out, "run1", kill_at="commit:move-1").returncode == -signal.SIGKILL
    assert _outputs(out) is None   # consumequeue/ moved aside, the new one not yet in place
    import shutil
    shutil.rmtree(out / ".rebuild-staging-run1")
    with caplog.at_level(logging.WARNING, logger="pipelines.commit"):
        StagedOutput(str(out), "run2", overwrite=True).check_target()
    assert _outputs(out) == OLD
    assert _debris(out) == []
    assert "rolled back the interrupted commit of run run1" in caplog.text


def test_a_roll_back_killed_half_way_ends_in_the_old_pair(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _write(out, OLD)
    assert _child(out, "run1", kill_at="commit:move-3").returncode == -signal.SIGKILL
    import shutil
    shutil.rmtree(out / ".rebuild-staging-run1" / "index")   # the last move cannot be made
    again = _child(out, "run2", action="recover", kill_at="rollback:undo-2")
    assert again.returncode == -signal.SIGKILL, again.stderr
    StagedOutput(str(out), "run3", overwrite=True).check_target()
    assert _outputs(out) == OLD
    assert _debris(out) == []


def test_a_failed_move_puts_the_old_outputs_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    _write(out, OLD)
    staged = StagedOutput(str(out), "run1", overwrite=True)
    staged.prepare()
    _write(Path(staged.staging_path), NEW)
    real = OutputRoot.rename
    calls = []

    def failing(self, src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real(self, src, dst)

    monkeypatch.setattr(OutputRoot, "rename", failing)
    with pytest.raises(OSError):
        staged.commit()
    assert _outputs(out) == OLD
    staged.abort()
    assert _debris(out) == []


def test_stale_staging_of_a_killed_run_is_removed_with_a_log_line(tmp_path, caplog):
    out = tmp_path / "out"
    out.mkdir()
    died = _child(out, "dead1", action="die")
    assert died.returncode == -signal.SIGKILL
    assert (out / ".rebuild-staging-dead1").is_dir() and (out / ".rebuild-staging-dead1.lock").exists()
    with caplog.at_level(logging.INFO, logger="pipelines.commit"):
        StagedOutput(str(out), "next").check_target()
    assert _debris(out) == []
    assert "removed stale staging folder .rebuild-staging-dead1 of a dead run" in caplog.text


def test_a_forked_worker_that_outlives_its_run_does_not_keep_it_alive(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    died = _child(out, "dead1", action="forkdie")
    assert died.returncode == -signal.SIGKILL
    worker = int(died.stdout.split()[0])
    try:
        os.kill(worker, 0)   # still running
        StagedOutput(str(out), "next").check_target()
        assert _debris(out) == []
    finally:
        os.kill(worker, signal.SIGKILL)


def test_staging_of_a_live_run_is_left_alone(tmp_path, caplog):
    out = tmp_path / "out"
    out.mkdir()
    import json
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(KILL_AT_ENV, None)
    payload = json.dumps({k: v.decode("latin-1") for k, v in NEW.items()})
    live = subprocess.Popen([sys.executable, "-c", CHILD, str(out), "live1", "rename", payload, "wait"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout is not None and live.stdout.readline().strip() == "ready"
        with caplog.at_level(logging.INFO, logger="pipelines.commit"):
            StagedOutput(str(out), "other").check_target()
        assert (out / ".rebuild-staging-live1").is_dir()
        assert (out / ".rebuild-staging-live1" / "index" / "20240202000000000").read_bytes() == NEW[
            "index/20240202000000000"]
        assert "left .rebuild-staging-live1 in place: run live1 is alive" in caplog.text
    finally:
        live.communicate("", timeout=60)   # the run ends without cleaning up: now it is dead
    StagedOutput(str(out), "later").check_target()
    assert _debris(out) == []


def test_without_flock_liveness_comes_from_the_owner_record(tmp_path, caplog):
    out = tmp_path / "out"
    out.mkdir()
    import json
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(KILL_AT_ENV, None)
    payload = json.dumps({k: v.decode("latin-1") for k, v in NEW.items()})
    live = subprocess.Popen([sys.executable, "-c", CHILD, str(out), "live1", "record", payload, "wait"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout is not None and live.stdout.readline().strip() == "ready"
        assert _child(out, "dead1", mode="record", action="die").returncode == -signal.SIGKILL
        assert (out / ".rebuild-staging-live1").is_dir() and (out / ".rebuild-staging-dead1").is_dir()
        cleaner = StagedOutput(str(out), "other")
        cleaner.target.local = False
        with caplog.at_level(logging.INFO, logger="pipelines.commit"):
            cleaner.check_target()
        assert _debris(out) == [".rebuild-staging-live1", ".rebuild-staging-live1.lock"]
        assert "removed stale staging folder .rebuild-staging-dead1 of a dead run" in caplog.text
    finally:
        live.communicate("", timeout=60)


def test_staging_without_an_owner_record_is_removed_once_old(tmp_path):
    out = tmp_path / "out"
    legacy = out / ".rebuild-staging-legacy1"
    (legacy / "consumequeue").mkdir(parents=True)
    (legacy / "consumequeue" / "x").write_bytes(b"x")
    StagedOutput(str(out), "next").check_target()
    assert legacy.is_dir()   # just changed: may belong to a run of another version
    old = time.time() - 3600
    os.utime(legacy, (old, old))
    StagedOutput(str(out), "next").check_target()
    assert _debris(out) == []


def test_existing_outputs_are_refused_without_overwrite(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _write(out, OLD)
    with pytest.raises(StoreLayoutError, match="--overwrite"):
        StagedOutput(str(out), "r").prepare()
    assert _debris(out) == []


def test_a_clean_commit_and_abort_leave_nothing_behind(tmp_path):
    out = tmp_path / "out"
    staged = StagedOutput(str(out), "r1")
    staged.prepare()
    _write(Path(staged.staging_path), NEW)
    staged.commit()
    assert _outputs(out) == NEW and _debris(out) == []
    again = StagedOutput(str(out), "r2", overwrite=True)
    again.prepare()
    _write(Path(again.staging_path), OLD)
    again.abort()
    assert _outputs(out) == NEW and _debris(out) == []
