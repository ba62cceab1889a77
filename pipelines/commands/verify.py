"""The ``verify`` and ``repair`` commands (:mod:`pipelines.verify`): checks of the arguments, the
run, the text or JSON output and the exit code."""
from __future__ import annotations

import json
import os

from store_format.config import BrokerConfig
from store_format.errors import StoreError

from ..verify.compare_store import verify_store
from ..verify.repair import repair_store


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def run_verify_command(*, store: str, config: BrokerConfig, work: str | None, engine: str, master: str | None,
                       split_size: int | None, as_json: bool, strict: bool = False) -> int:
    """``verify``: exit 0 identical, 1 differences (StoreError → the CLI prints one line, exit 2).
    A broker that may be running on the store: a warning, or with ``strict`` a refusal
    (:func:`pipelines.brokerlock.warn_if_broker_live`)."""
    from ..brokerlock import warn_if_broker_live
    warn_if_broker_live(store, strict=strict,
                        meaning="the broker keeps writing its newest commitlog segment, consume queue and index "
                                "files, so differences in them may be writes in progress rather than damage")
    if work is not None and "://" not in store and _inside(work, store):
        raise StoreError(f"--work {work} is inside the store: verify only reads the store; choose a folder outside it")
    report = verify_store(store, config, work=work, engine=engine, master=master, split_size=split_size,
                          processes=os.cpu_count() or 1)
    print(json.dumps(report.as_dict(), indent=2, default=str) if as_json else report.render())
    return 0 if report.identical else 1


def run_repair_command(*, store: str, config: BrokerConfig, backup: str | None, dry_run: bool, force: bool,
                       engine: str, master: str | None, split_size: int | None, as_json: bool) -> int:
    """``repair``: exit 0 when the store now matches the rebuild (repaired, or nothing to do), 1 for a
    dry run that found differences, 2 for errors and refusals (StoreError)."""
    result = repair_store(store, config, backup=backup, dry_run=dry_run, force=force, engine=engine, master=master,
                          split_size=split_size, processes=os.cpu_count() or 1)
    print(json.dumps(result.as_dict(), indent=2, default=str) if as_json else result.render())
    return 1 if dry_run and result.plan.actions else 0
