"""The moves of a commit plan, done forward (a commit, or the recovery completing a killed one) or
undone (a roll-back), each recorded in the journal (:mod:`.journal`) as it becomes durable.

Every move is a rename whose before and after states cannot be confused, so a move found already
made (source gone, destination there) is only marked.  Where a rename is a copy then a delete
(object stores), a ``copied`` marker between the two says which half is left: an interrupted copy
is redone from the intact source, an interrupted delete is finished.
"""
from __future__ import annotations

import pyarrow.fs as pafs

from store_format.errors import StoreLayoutError

from .journal import COMMIT_PREFIX, PLAN_SUFFIX, CommitJournal, kill_point
from .outroot import OutputRoot

__all__ = ["PlanMoves", "StagedMissing"]


class StagedMissing(Exception):
    """A move's source and destination are both gone: the plan cannot be completed."""

    def __init__(self, index: int, path: str) -> None:
        super().__init__(path)
        self.index = index
        self.path = path


class PlanMoves:
    """Moves of the plans in one ``OUT``, under its journal."""

    def __init__(self, out: OutputRoot, journal: CommitJournal) -> None:
        self.out = out
        self.journal = journal

    def forward(self, run_id: str, moves: list[tuple[str, str]], start: int, phase: str, atomic: bool) -> None:
        """Moves ``start``.. of a plan, each followed by its ``done`` marker.  A move found already
        made (source gone, destination there) is only marked.  ``atomic``: the plan's moves are
        renames; otherwise copies then deletes, with a ``copied`` marker between.

        Raises:
            StagedMissing: a move's source and destination are both gone.
            StoreLayoutError: a move's source and destination both exist.
        """
        out = self.out
        copied = self.journal.copied(run_id)
        for k in range(start, len(moves)):
            src, dst = (f"{out.root}/{p}" for p in moves[k])
            has_src, has_dst = out.exists(src), out.exists(dst)
            if atomic:
                if has_src and has_dst:
                    raise StoreLayoutError(
                        f"{out.uri}: both {moves[k][0]} and {moves[k][1]} exist while the commit of run {run_id} "
                        "moves one onto the other; something else changed this output. Check both and delete the "
                        f"wrong one, then run again (journal: {COMMIT_PREFIX}{run_id}{PLAN_SUFFIX})")
                if has_src:
                    out.rename(src, dst)
                elif not has_dst:
                    raise StagedMissing(k, moves[k][0])
            else:
                if k in copied:
                    if has_src:
                        out.fs.delete_dir(src)
                elif has_src:
                    if has_dst:
                        out.fs.delete_dir(dst)   # a copy cut short: start it again
                    out.copy_tree(src, dst)
                    self.journal.mark(run_id, "copied", k)
                    kill_point(f"{phase}:copy-{k + 1}")
                    out.fs.delete_dir(src)
                elif not has_dst:
                    raise StagedMissing(k, moves[k][0])
            self.journal.mark(run_id, "done", k + 1)
            kill_point(f"{phase}:move-{k + 1}")

    def roll_back(self, run_id: str, moves: list[tuple[str, str]], upto: int, old: str) -> None:
        """Rename back the first ``upto`` moves, last first, then remove the (now empty) folder of the
        old outputs and the journal.  Each move's ``done`` marker goes before the move is undone, so
        an interrupted roll-back leaves a journal that the next run simply completes forward.

        Raises:
            StoreLayoutError: the folder of the old outputs still holds files afterwards.
        """
        out = self.out
        for k in range(upto - 1, -1, -1):
            self.journal.unmark_done(run_id, k + 1)
            src, dst = (f"{out.root}/{p}" for p in moves[k])
            if out.exists(dst) and not out.exists(src):
                out.rename(dst, src)
            kill_point(f"rollback:undo-{k + 1}")
        old_path = f"{out.root}/{old}"
        if out.exists(old_path):
            left = out.fs.get_file_info(pafs.FileSelector(old_path, recursive=True))
            if any(i.type == pafs.FileType.File for i in left):
                raise StoreLayoutError(f"{out.uri}/{old} still holds files after rolling back the commit of run "
                                       f"{run_id}; check them against consumequeue/ and index/")
            out.fs.delete_dir(old_path)
        self.journal.drop(run_id)

    def finish(self, run_id: str, moves: list[tuple[str, str]], old: str, staging: str, phase: str) -> None:
        """All moves are done: delete the old outputs and the staging folder, then the journal."""
        for folder in (old, staging):
            if self.out.exists(f"{self.out.root}/{folder}"):
                self.out.fs.delete_dir(f"{self.out.root}/{folder}")
        kill_point(f"{phase}:cleaned")
        self.journal.drop(run_id, keep_last=len(moves))
