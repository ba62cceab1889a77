"""Publication of a rebuild that survives crashes: build beside the target, then move into place
under a journal that the next run completes.

Everything a run writes goes under ``OUT/.rebuild-staging-<run>/``; the commit then moves the
previous ``consumequeue/`` and ``index/`` (if any) aside and the new ones into place.  Two folders
cannot be replaced in one atomic step, so the commit is journaled: a plan of moves, written durably
before the first move, and a ``done`` marker after each (:mod:`.journal` lists the files).

Before it does anything else, a run (:meth:`StagedOutput.check_target`, which
:meth:`~StagedOutput.prepare` and :meth:`~StagedOutput.commit` call) completes every commit whose
owner is dead (:mod:`.recovery`): it redoes the moves not marked done (each is a rename whose
before and after states cannot be confused, :mod:`.moves`), then deletes the old folders and the
journal, so ``OUT`` holds the new pair complete; only if the staged files a plan names have
vanished does it roll the moves back, so ``OUT`` holds the old pair complete.  Either way ``OUT``
never stays half-committed: between a crash and the next run, the journal files beside
``consumequeue/`` say that ``OUT`` is mid-commit and what to do.  Stale staging folders of dead
runs are deleted with a log line; a live run's are left alone (with a log line).

Guarantees by file system:

* local (and NFS with working locks): liveness from ``flock`` (:mod:`.liveness`; processes forked
  by the run close their copy of the lock, so a worker that outlives the run does not keep it
  "alive"); renames are atomic; staged files are flushed (``syncfs``) before the plan is written and
  the folders are fsynced after every move (best effort: a folder that cannot be fsynced is not an
  error, see :mod:`pipelines.durable`), so the guarantee holds across power loss too.
* HDFS (``pyarrow.fs.HadoopFileSystem``): renames are atomic, nothing to fsync; liveness comes from
  the owner record: a run on this host whose process is gone is dead, a run on another host is
  dead once its heartbeat (rewritten every 30 s) is older than 10 minutes (clocks must roughly
  agree).  Two runs must not commit into one ``OUT`` at the same moment (nothing exclusive there).
* object stores (``s3://``, where a "rename" is a copy then a delete): each move is a copy, an
  ``.copied-<k>`` marker, then the delete of the source; an interrupted copy is redone from the
  intact source, an interrupted delete is finished.  ``OUT`` is complete again only after the next
  run's recovery, and readers listing ``OUT`` during a commit can see partial folders.  A plan whose
  staged files vanished is not rolled back there: the next run stops with instructions.

Modules: :mod:`.staged` (:class:`StagedOutput`, the steps a run calls), :mod:`.journal` (the files in
``OUT``), :mod:`.moves` (doing and undoing a plan's moves), :mod:`.recovery` (completing killed
commits, removing debris), :mod:`.liveness` (owner records and locks), :mod:`.outroot` (``OUT``'s
file system).
"""
from __future__ import annotations

from .journal import KILL_AT_ENV, OUTPUTS
from .staged import StagedOutput

__all__ = ["StagedOutput", "OUTPUTS", "KILL_AT_ENV"]
