"""The commit/replace procedure of a run's outputs: build them beside the target under
``OUT/.rebuild-staging-<run>/``, then move them into place under the journal (see
:mod:`pipelines.commit` for the whole story)."""
from __future__ import annotations

import logging
import time
import uuid

import pyarrow.fs as pafs

from store_format.errors import StoreLayoutError

from ..durable import sync_tree
from .journal import (
    FORMAT,
    OLD_PREFIX,
    OPTIONAL_OUTPUTS,
    OUTPUTS,
    REQUIRED_OUTPUTS,
    STAGING_PREFIX,
    CommitJournal,
    kill_point,
)
from .liveness import RunClaim, owner_record
from .moves import PlanMoves
from .outroot import OutputRoot
from .recovery import recover_output

__all__ = ["StagedOutput"]

log = logging.getLogger("pipelines.commit")   # the commit's lines keep the logger (and [commit] tag) they always had


class StagedOutput:
    """``OUT/.rebuild-staging-<run>/{consumequeue,index}`` → ``OUT/{consumequeue,index}``, journaled
    (and ``consumequeue_ext/`` or ``batchconsumequeue/`` when the run wrote one; an existing one is
    moved aside in any case).

    Args:
        out_uri: the output root (local path, ``hdfs://`` or ``s3://`` URI).
        run_id: this run's id (default: a random one); names the staging folder.
        overwrite: replace existing ``consumequeue/`` and ``index/`` at commit.
        durable: flush the staged files to disk before committing (local file systems).
        optional: the names of :data:`OPTIONAL_OUTPUTS` this run writes (``rocksdbstore``): an existing one
            counts as an output (refused without ``overwrite``) and is replaced at commit.

    Example::

        staged = StagedOutput(out, run_id)
        staged.prepare()          # completes interrupted commits, removes debris, claims the run
        ...write under staged.staging_uri...
        staged.commit()           # or staged.abort() on failure
    """

    def __init__(self, out_uri: str, run_id: str | None = None, overwrite: bool = False, *,
                 durable: bool = True, optional: tuple[str, ...] = ()) -> None:
        assert set(optional) <= set(OPTIONAL_OUTPUTS), optional
        self.outputs = OUTPUTS + tuple(optional)
        self.target = OutputRoot.of(out_uri, durable=durable)   # OUT, its file system and how it renames
        self.out_uri = self.target.uri
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.fs, self.root = self.target.fs, self.target.root
        self.overwrite = overwrite
        self.staging_path = f"{self.root}/{STAGING_PREFIX}{self.run_id}"
        self.staging_uri = f"{self.out_uri}/{STAGING_PREFIX}{self.run_id}"
        self._journal = CommitJournal(self.target)
        self._moves = PlanMoves(self.target, self._journal)
        self._claim = RunClaim(self.target, self.run_id)
        self._created_root = False   # prepare() made OUT: an aborted run takes it away again if empty
        self.recovered: list[str] = []   # what the last recovery did, one line per action

    def check_target(self) -> None:
        """Complete or roll back interrupted commits and remove stale debris in ``OUT``, then refuse
        when ``OUT`` already holds outputs and overwriting was not asked for."""
        self.recover()
        existing = [name for name in self.outputs if self.target.exists(f"{self.root}/{name}")]
        if existing and not self.overwrite:
            raise StoreLayoutError(
                f"{self.out_uri} already has {', '.join(n + '/' for n in existing)}; choose an empty --out, or pass "
                "--overwrite to replace them once the new files are complete")

    def recover(self) -> list[str]:
        """Complete (or, when its staged files are gone, roll back) every commit in ``OUT`` whose run
        is dead, then delete staging folders, owner records and journal files of dead runs
        (:func:`pipelines.commit.recovery.recover_output`).

        Returns:
            One line per action taken (also logged).
        """
        self.recovered = []
        return recover_output(self.target, self.run_id, self.recovered)

    def prepare(self) -> None:
        """:meth:`check_target`, then claim the run (owner record and lock) and create the staging
        folders."""
        self.check_target()
        self._created_root = self._created_root or not self.target.exists(self.root)
        self.fs.create_dir(self.root, recursive=True)
        if not self._claim.held:
            self._claim.take()
        for name in REQUIRED_OUTPUTS:
            self.fs.create_dir(f"{self.staging_path}/{name}", recursive=True)

    def rename_staged(self, relative_from: str, relative_to: str) -> None:
        self.fs.move(f"{self.staging_path}/{relative_from}", f"{self.staging_path}/{relative_to}")

    def read_staged(self, relative: str) -> bytes:
        """The bytes of one staged output file (one the broker's restart rewrites:
        ``pipelines.restart_cut.apply_cut``)."""
        with self.fs.open_input_file(f"{self.staging_path}/{relative}") as f:
            return f.read()

    def delete_staged(self, relative: str) -> None:
        """Remove one staged output file (a file the broker's restart deletes: ``pipelines.restart_cut.apply_cut``)."""
        self.fs.delete_file(f"{self.staging_path}/{relative}")

    def drop_work(self) -> None:
        """Delete the scan's intermediate files once the outputs are built."""
        work = f"{self.staging_path}/_work"
        if self.target.exists(work):
            self.fs.delete_dir(work)

    def commit(self) -> None:
        """Move the staged folders into place (replacing old ones only now, when asked to), under
        the journal described in :mod:`pipelines.commit`.

        Raises:
            StoreLayoutError: ``OUT`` gained outputs meanwhile and overwriting was not asked for, or
                another live run is committing into ``OUT`` for longer than the wait allows.
        """
        self.check_target()
        for name in REQUIRED_OUTPUTS:
            if not self.target.exists(f"{self.staging_path}/{name}"):
                raise StoreLayoutError(f"{self.staging_uri}/{name} is missing: nothing complete to commit")
        if self.target.local and self.target.durable:
            sync_tree(self.staging_path)
        kill_point("commit:synced")
        old = f"{OLD_PREFIX}{self.run_id}"
        moves: list[tuple[str, str]] = []
        for name in self.outputs:
            if self.target.exists(f"{self.root}/{name}"):
                moves.append((name, f"{old}/{name}"))
            if name in REQUIRED_OUTPUTS or self.target.exists(f"{self.staging_path}/{name}"):
                moves.append((f"{STAGING_PREFIX}{self.run_id}/{name}", name))
        atomic = self.target.atomic_rename
        self._journal.write_plan(self.run_id, {
            "format": FORMAT, "run_id": self.run_id, "moves": moves, "old": old,
            "staging": f"{STAGING_PREFIX}{self.run_id}", "owner": owner_record(self.run_id),
            "mode": "rename" if atomic else "copy"})
        kill_point("commit:journal")
        try:
            self._moves.forward(self.run_id, moves, 0, "commit", atomic)
        except BaseException as error:
            self._after_failed_moves(moves, error)
            raise
        kill_point("commit:moved")
        self._moves.finish(self.run_id, moves, old, f"{STAGING_PREFIX}{self.run_id}", "commit")
        self._claim.release()

    def abort(self) -> None:
        """Delete this run's staging folder and give up its claim.  After a commit that failed
        half-way and could not be rolled back, the staging folder is kept for the journal: the
        next run completes that commit."""
        if self.target.exists(self._journal.plan_path(self.run_id)):
            log.warning("%s: the commit of run %s was interrupted; the next run on this output completes it",
                        self.out_uri, self.run_id)
        elif self.target.exists(self.staging_path):
            self._delete_staging()
        self._claim.release()
        if self._created_root:   # OUT as it was: not there
            try:
                if not self.fs.get_file_info(pafs.FileSelector(self.root)):
                    self.fs.delete_dir(self.root)
            except OSError:
                pass

    def _delete_staging(self, patience: float = 5.0) -> None:
        """Remove this run's staging folder; tasks of an interrupted job may still be writing into
        it for a moment, so retry, and leave it to the next run (which removes a dead run's folder)
        if they do not stop."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self.fs.delete_dir(self.staging_path)
                return
            except FileNotFoundError:
                return
            except OSError as err:
                if time.monotonic() >= deadline:
                    log.warning("%s: could not remove %s yet (%s); the next run on this output removes it",
                                self.out_uri, self.staging_uri, err)
                    return
                time.sleep(0.2)

    def _after_failed_moves(self, moves: list[tuple[str, str]], error: BaseException) -> None:
        """A move of our own commit failed (or we were interrupted).  With atomic renames the moves
        done are undone, so ``OUT`` holds its previous outputs again; where a move is a copy (which
        may have been cut short) the journal stays and the next run completes the commit."""
        if not self.target.atomic_rename:
            log.warning("%s: commit failed (%s); the next run on this output completes it", self.out_uri, error)
            return
        try:
            self._moves.roll_back(self.run_id, moves, min(self._journal.done_count(self.run_id) + 1, len(moves)),
                                  f"{OLD_PREFIX}{self.run_id}")
            log.warning("%s: commit failed (%s); the previous outputs were put back", self.out_uri, error)
        except Exception as e:  # the journal stays: the next run completes the commit
            log.warning("%s: commit failed (%s) and could not be rolled back (%s); the next run on this output "
                        "completes it", self.out_uri, error, e)
