"""The commit journal's format in ``OUT``: the names of a run's files there, the plan of moves and
its ``done``/``copied`` markers, read and written durably.

``OUT/.rebuild-staging-<run>/``
    the run's outputs while they are built (``consumequeue/``, ``index/``, ``_work/``; with
    ``enableConsumeQueueExt`` ``consumequeue_ext/``, with BatchCQ topics ``batchconsumequeue/``).
``OUT/.rebuild-staging-<run>.lock``
    the run's owner record (:mod:`.liveness`).
``OUT/.rebuild-commit-<run>.json``
    the commit plan: the list of moves (``consumequeue/`` → ``.rebuild-old-<run>/consumequeue``,
    staged ``consumequeue/`` → ``consumequeue/``, the same for ``index/``), written once and made
    durable (temporary file, fsync, hard link to its name, fsync of ``OUT``) before the first move.
``OUT/.rebuild-commit-<run>.done-<k>``
    empty markers: the first ``k`` moves are done and durable (``done-<n>``: all of them; only the
    old folders and the staging folder are left to delete).
``OUT/.rebuild-commit-<run>.copied-<k>``
    where a move is a copy then a delete (object stores): move ``k`` is copied, its source is
    left to delete.
``OUT/.rebuild-old-<run>/``
    the previous outputs while the commit runs.
"""
from __future__ import annotations

import json
import os
import re
import signal
import uuid

from store_format.errors import StoreLayoutError

from .outroot import OutputRoot

__all__ = ["CommitJournal", "OUTPUTS", "OPTIONAL_OUTPUTS", "REQUIRED_OUTPUTS", "KILL_AT_ENV", "kill_point", "FORMAT",
           "STAGING_PREFIX", "OLD_PREFIX", "COMMIT_PREFIX", "LOCK_SUFFIX", "LOCK_TMP_PREFIX", "PLAN_SUFFIX", "MARK_RE"]

# what a run commits into OUT.  consumequeue_ext/ (enableConsumeQueueExt) and batchconsumequeue/
# (BatchCQ topics) exist for some stores only: committed when staged, and an existing one is replaced
# (moved aside) either way, so a rebuild leaves no stale files of a layout it did not write
OUTPUTS = ("consumequeue", "consumequeue_ext", "batchconsumequeue", "index")
REQUIRED_OUTPUTS = ("consumequeue", "index")
# outputs a run writes for some settings only and that OUT may hold for other reasons (5.5's
# rocksdbstore/ also keeps the broker's timer and transaction records): an existing one is replaced only
# by a run that staged one (StagedOutput's ``optional``), never moved aside otherwise
OPTIONAL_OUTPUTS = ("rocksdbstore",)
STAGING_PREFIX = ".rebuild-staging-"
OLD_PREFIX = ".rebuild-old-"
COMMIT_PREFIX = ".rebuild-commit-"
LOCK_SUFFIX = ".lock"
LOCK_TMP_PREFIX = ".rebuild-lock-tmp-"
PLAN_SUFFIX = ".json"
FORMAT = 1

MARK_RE = re.compile(r"^\.rebuild-commit-(?P<run>.+)\.(?P<kind>done|copied)-(?P<k>\d+)$")

# Test hook: the name of a step after which the process kills itself with SIGKILL (tests/test_commit.py)
KILL_AT_ENV = "ROCKETMQ_REBUILD_KILL_AT"


def kill_point(step: str) -> None:
    """Die here (SIGKILL) when the test hook :data:`KILL_AT_ENV` names ``step``."""
    if os.environ.get(KILL_AT_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


class CommitJournal:
    """The plans and markers of the commits into one ``OUT``."""

    def __init__(self, out: OutputRoot) -> None:
        self.out = out

    def plan_path(self, run_id: str) -> str:
        return f"{self.out.root}/{COMMIT_PREFIX}{run_id}{PLAN_SUFFIX}"

    def marker(self, run_id: str, kind: str, k: int) -> str:
        return f"{self.out.root}/{COMMIT_PREFIX}{run_id}.{kind}-{k}"

    def plans(self) -> dict[str, dict]:
        """Every commit plan in ``OUT``, by run id.

        Raises:
            StoreLayoutError: a plan cannot be read.
        """
        plans = {}
        for name in self.out.list_root():
            if name.startswith(COMMIT_PREFIX) and name.endswith(PLAN_SUFFIX):
                run_id = name[len(COMMIT_PREFIX):-len(PLAN_SUFFIX)]
                try:
                    plans[run_id] = json.loads(self.out.read(f"{self.out.root}/{name}"))
                except (OSError, ValueError) as e:
                    raise StoreLayoutError(f"{self.out.uri}/{name}: unreadable commit journal ({e}); if no "
                                           "rebuild is running, check consumequeue/ and index/ and delete it") from e
        return plans

    def done_count(self, run_id: str) -> int:
        """How many of the run's moves are marked done."""
        done = 0
        for name in self.out.list_root():
            m = MARK_RE.match(name)
            if m and m.group("run") == run_id and m.group("kind") == "done":
                done = max(done, int(m.group("k")))
        return done

    def copied(self, run_id: str) -> set[int]:
        """The run's moves marked copied (their sources are left to delete)."""
        out = set()
        for name in self.out.list_root():
            m = MARK_RE.match(name)
            if m and m.group("run") == run_id and m.group("kind") == "copied":
                out.add(int(m.group("k")))
        return out

    def write_plan(self, run_id: str, plan: dict) -> None:
        """Write the plan durably and exclusively: no other plan may exist (recovery ran just before;
        a concurrent committer loses the tie by run id).

        Raises:
            StoreLayoutError: another run wrote its plan at the same time.
        """
        data = json.dumps(plan, indent=1).encode()
        path = self.plan_path(run_id)
        if self.out.local:
            tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)   # fails if it exists: never overwrite a journal
            finally:
                os.unlink(tmp)
            self.out.sync_root()
        else:
            self.out.write(path, data)
        others = [r for r in self.plans() if r != run_id]
        if others:
            self.out.delete_file(path)
            raise StoreLayoutError(f"{self.out.uri}: run {others[0]} started a commit into this output at the same "
                                   "time; run again once it has finished")

    def mark(self, run_id: str, kind: str, k: int) -> None:
        """Create the (durable) marker ``<kind>-<k>`` of the run's plan."""
        path = self.marker(run_id, kind, k)
        if self.out.local:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            os.close(fd)
            self.out.sync_root()
        else:
            self.out.write(path, b"")

    def unmark_done(self, run_id: str, k: int) -> None:
        """Delete the run's ``done-<k>`` marker (durably)."""
        self.out.delete_file(self.marker(run_id, "done", k))
        self.out.sync_root()

    def drop(self, run_id: str, keep_last: int | None = None) -> None:
        """Delete a run's markers and plan; the ``done-<n>`` marker (all moves done, ``keep_last``)
        goes last, so a plan is never seen without it once its moves are complete."""
        for name in self.out.list_root():
            m = MARK_RE.match(name)
            if m and m.group("run") == run_id and not (m.group("kind") == "done" and int(m.group("k")) == keep_last):
                self.out.delete_file(f"{self.out.root}/{name}")
        self.out.delete_file(self.plan_path(run_id))
        if keep_last is not None:
            self.out.delete_file(self.marker(run_id, "done", keep_last))
        self.out.sync_root()
