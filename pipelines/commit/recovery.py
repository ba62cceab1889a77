"""Recovery of killed commits: before a run does anything in ``OUT``, every commit there whose run
is dead (:mod:`.liveness`) is completed from its journal (:mod:`.journal`): the moves not marked
done are redone, then the old folders and the journal are deleted, so ``OUT`` holds the new pair
complete; only if the staged files a plan names have vanished are the moves rolled back, so ``OUT``
holds the old pair complete (on object stores the run stops with instructions instead).  Then the
debris of dead runs goes: staging folders, owner records, stray markers; a live run's are left
alone, with a log line.  A live run's commit is waited for.
"""
from __future__ import annotations

import logging
import time

from store_format.errors import StoreLayoutError

from .journal import (
    COMMIT_PREFIX,
    LOCK_SUFFIX,
    LOCK_TMP_PREFIX,
    MARK_RE,
    OLD_PREFIX,
    PLAN_SUFFIX,
    STAGING_PREFIX,
    CommitJournal,
)
from .liveness import describe, liveness, lock_path, remove_lock_tmp
from .moves import PlanMoves, StagedMissing
from .outroot import OutputRoot

__all__ = ["recover_output", "WAIT_S", "LEGACY_GRACE_S"]

log = logging.getLogger("pipelines.commit")   # the commit's lines keep the logger (and [commit] tag) they always had

LEGACY_GRACE_S = 600.0     # staging without an owner record younger than this is left alone
WAIT_S = 600.0             # how long a run waits for another live run's commit to finish


def recover_output(out: OutputRoot, own_run_id: str, recovered: list[str]) -> list[str]:
    """Complete (or, when its staged files are gone, roll back) every commit in ``OUT`` whose run
    is dead, then delete staging folders, owner records and journal files of dead runs; the run
    ``own_run_id`` (the caller's) is left alone.

    Args:
        out: the output root.
        own_run_id: the calling run.
        recovered: gets one line per action taken (also logged).

    Returns:
        ``recovered``.

    Raises:
        StoreLayoutError: a live run is committing into ``OUT`` for longer than the wait allows, or a
            killed commit can be neither completed nor rolled back.
    """
    _Recovery(out, own_run_id, recovered).run()
    return recovered


class _Recovery:
    def __init__(self, out: OutputRoot, own_run_id: str, recovered: list[str]) -> None:
        self.out = out
        self.run_id = own_run_id
        self.recovered = recovered
        self.journal = CommitJournal(out)
        self.moves = PlanMoves(out, self.journal)

    def run(self) -> None:
        out = self.out
        if not out.exists(out.root):
            return
        deadline = time.monotonic() + WAIT_S
        while True:
            plans = self.journal.plans()
            waiting = []
            for run_id in sorted(plans):
                if run_id == self.run_id:
                    continue
                live = liveness(out, run_id)
                try:
                    if live.alive:
                        waiting.append((run_id, live.owner))
                        continue
                    self._recover_plan(run_id, plans[run_id])
                finally:
                    live.release()
            if not waiting:
                break
            if time.monotonic() > deadline:
                run_id, owner = waiting[0]
                raise StoreLayoutError(
                    f"{out.uri}: run {run_id} ({describe(owner)}) is committing into this output; wait "
                    "for it to finish, or choose another --out")
            log.info("%s: waiting for run %s (%s) to finish its commit", out.uri, waiting[0][0],
                     describe(waiting[0][1]))
            time.sleep(0.5)
        self._remove_debris()

    def _recover_plan(self, run_id: str, plan: dict) -> None:
        out = self.out
        moves = [tuple(m) for m in plan["moves"]]
        done = self.journal.done_count(run_id)
        if done < len(moves):
            try:
                self.moves.forward(run_id, moves, done, "recover", plan.get("mode", "rename") == "rename")
            except StagedMissing as missing:
                if plan.get("mode", "rename") != "rename":
                    raise StoreLayoutError(
                        f"{out.uri}: the interrupted commit of run {run_id} cannot be completed: its staged "
                        f"{missing.path} is gone. Its first {missing.index} moves are done (see "
                        f"{COMMIT_PREFIX}{run_id}{PLAN_SUFFIX}); move {plan['old']}/* back by hand, then delete the "
                        f"{COMMIT_PREFIX}{run_id}.* files") from None
                self.moves.roll_back(run_id, moves, missing.index, plan["old"])
                if out.exists(f"{out.root}/{plan['staging']}"):
                    out.fs.delete_dir(f"{out.root}/{plan['staging']}")
                out.delete_file(lock_path(out, run_id))
                self._note(f"rolled back the interrupted commit of run {run_id}: its staged {missing.path} is gone, "
                           f"so {out.uri} keeps its previous consumequeue/ and index/")
                return
            self._note(f"completed the interrupted commit of run {run_id} ({len(moves) - done} of {len(moves)} "
                       f"moves were left): {out.uri} now holds that run's consumequeue/ and index/")
        else:
            self._note(f"finished the interrupted commit of run {run_id}: its consumequeue/ and index/ were in "
                       "place; removed what it had moved aside and its journal")
        self.moves.finish(run_id, moves, plan["old"], plan["staging"], "recover")
        out.delete_file(lock_path(out, run_id))

    def _remove_debris(self) -> None:
        """Staging folders, owner records and stray journal markers of dead runs."""
        out = self.out
        now = time.time()
        names = out.list_root()
        plans = {n[len(COMMIT_PREFIX):-len(PLAN_SUFFIX)] for n in names
                 if n.startswith(COMMIT_PREFIX) and n.endswith(PLAN_SUFFIX)}
        runs: dict[str, set[str]] = {}
        for name, _ in names.items():
            if name.startswith(STAGING_PREFIX):
                run_id = name[len(STAGING_PREFIX):]
                if run_id.endswith(LOCK_SUFFIX):
                    run_id = run_id[:-len(LOCK_SUFFIX)]
                runs.setdefault(run_id, set()).add(name)
            elif name.startswith(LOCK_TMP_PREFIX) and out.local:
                remove_lock_tmp(out, f"{out.root}/{name}")
            else:
                m = MARK_RE.match(name)
                if m and m.group("run") not in plans:
                    out.delete_file(f"{out.root}/{name}")
            if name.startswith(OLD_PREFIX) and name[len(OLD_PREFIX):] not in plans:
                log.warning("%s/%s holds consumequeue/ or index/ moved aside by an older version of this tool, "
                            "whose commit was interrupted; check it and delete it by hand", out.uri, name)
        for run_id, entries in sorted(runs.items()):
            if run_id == self.run_id or run_id in plans:
                continue
            staging = f"{out.root}/{STAGING_PREFIX}{run_id}"
            has_lock = f"{STAGING_PREFIX}{run_id}{LOCK_SUFFIX}" in entries
            if not has_lock:
                info = names.get(f"{STAGING_PREFIX}{run_id}")
                age = now - (info.mtime_ns or 0) / 1e9 if info is not None and info.mtime_ns else LEGACY_GRACE_S + 1
                if age < LEGACY_GRACE_S:
                    log.info("%s: left %s in place: it has no owner record but changed %.0f s ago", out.uri,
                             f"{STAGING_PREFIX}{run_id}", age)
                    continue
                size = out.tree_size(staging)
                out.fs.delete_dir(staging)
                self._note(f"removed stale staging folder {STAGING_PREFIX}{run_id} ({size:,} bytes; no owner "
                           "record: left by a run that was killed or by an older version)")
                continue
            live = liveness(out, run_id)
            try:
                if live.alive:
                    if f"{STAGING_PREFIX}{run_id}" in entries:
                        log.info("%s: left %s in place: run %s is alive (%s)", out.uri,
                                 f"{STAGING_PREFIX}{run_id}", run_id, describe(live.owner))
                    continue
                size = out.tree_size(staging) if f"{STAGING_PREFIX}{run_id}" in entries else 0
                if size or f"{STAGING_PREFIX}{run_id}" in entries:
                    out.fs.delete_dir(staging)
                    self._note(f"removed stale staging folder {STAGING_PREFIX}{run_id} of a dead run "
                               f"({describe(live.owner)}; {size:,} bytes)")
                out.delete_file(lock_path(out, run_id))
            finally:
                live.release()

    def _note(self, line: str) -> None:
        self.recovered.append(line)
        log.warning("%s: %s", self.out.uri, line)
