"""Store layouts this project does not rebuild, or rebuilds only with the settings that made them,
recognised from the store's own contents.

``broker.conf`` may not say how a store was written (the reviewer, an operator, a copied store), so
the folders and files a broker creates for the other layouts are looked for as well; each one is
refused with one line naming the layout, never rebuilt as ordinary consume queues.  Paths follow
``StorePathConfigHelper`` (4.9.8, 5.3.3, 5.5.1) and ``BrokerPathConfigHelper.getTopicConfigPath``:

* ``batchconsumequeue/`` (``getStorePathBatchConsumeQueue``): ``BatchConsumeQueue`` files, written for
  topics whose ``queue.type`` attribute is ``BatchCQ`` (``QueueTypeUtils.getCQType``,
  ``ConsumeQueueStore.findOrCreateConsumeQueue``; 5.x).  The attribute lives in
  ``config/topics.json`` (``TopicConfig.attributes``; ``TopicAttributes.QUEUE_TYPE_ATTRIBUTE``,
  default ``SimpleCQ``): any other value is refused, naming the topics.
* ``consumequeue_ext/`` (``getStorePathConsumeQueueExt``): ``ConsumeQueueExt`` files, written with
  ``enableConsumeQueueExt=true``; the consume queue then stores ext addresses instead of tag hash codes
  (rebuilt by :mod:`store_format.consumequeue_ext`): refused only when the settings do not say
  ``enableConsumeQueueExt=true``.
* ``dledger-<selfId>/`` (``DLedgerCommitLog``; :mod:`store_format.dledger` reads it): refused only
  when the settings do not say ``enableDLegerCommitLog=true``.
* a RocksDB database in ``consumequeue/`` (``RocksDBConsumeQueueStore`` opens it at
  ``getStorePathConsumeQueue``; ``storeType=defaultRocksDB``): its ``CURRENT`` and ``MANIFEST-*``
  files.
"""
from __future__ import annotations

import json
import re

import pyarrow.fs as pafs

from .errors import StoreLayoutError

__all__ = ["check_store_layout", "batch_cq_topics"]

_DLEDGER_RE = re.compile(r"^dledger(-.*)?$")
_QUEUE_TYPE_KEYS = ("queue.type", "+queue.type")   # TopicAttributes.QUEUE_TYPE_ATTRIBUTE (stored without "+")
_SIMPLE_CQ = "SimpleCQ"


def _children(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    try:
        return fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _has_files(fs: pafs.FileSystem, path: str) -> bool:
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
    except (FileNotFoundError, NotADirectoryError):
        return False
    return any(i.type == pafs.FileType.File for i in infos)


def batch_cq_topics(topics_json: str) -> list[str]:
    """Topics of a ``config/topics.json`` whose consume queue type is not ``SimpleCQ`` (with the value),
    as ``QueueTypeUtils.getCQType`` reads ``TopicConfig.attributes``."""
    try:
        doc = json.loads(topics_json)
    except ValueError:
        return []
    table = doc.get("topicConfigTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        return []
    found = []
    for name, topic in sorted(table.items()):
        attrs = topic.get("attributes") if isinstance(topic, dict) else None
        if not isinstance(attrs, dict):
            continue
        value = next((attrs[k] for k in _QUEUE_TYPE_KEYS if k in attrs), None)
        if value is not None and value != _SIMPLE_CQ:
            found.append(f"{name} (queue.type={value})")
    return found


def check_store_layout(fs: pafs.FileSystem, root: str, uri: str, *, dledger: bool = False,
                       cq_ext: bool = False) -> None:
    """Refuse a store laid out in a way this project does not rebuild (module docstring).

    ``dledger``: the settings say ``enableDLegerCommitLog=true`` (:mod:`store_format.dledger` reads
    it); without it a ``dledger-*`` folder is refused, since the settings the store was written with
    are then not the ones given.  ``cq_ext``: the same for ``enableConsumeQueueExt=true`` and a
    ``consumequeue_ext/`` folder.

    Raises:
        StoreLayoutError: one line naming the layout, what shows it, and the topics where known.
    """
    names = {i.base_name: i for i in _children(fs, root)}
    found = sorted(n for n, i in names.items() if i.type == pafs.FileType.Directory and _DLEDGER_RE.match(n))
    if found and not dledger:
        raise StoreLayoutError(
            f"{uri}: {found[0]}/ is a DLedger commitlog (DLedgerCommitLog), but the settings say "
            "enableDLegerCommitLog=false: pass the broker.conf the store was written with (--config), with "
            "enableDLegerCommitLog=true and its dLegerSelfId")
    topics_path = f"{root}/config/topics.json"
    batch: list[str] = []
    if "config" in names:
        info = fs.get_file_info(topics_path)
        if info.type == pafs.FileType.File:
            with fs.open_input_stream(topics_path) as f:
                batch = batch_cq_topics(f.read().decode("utf-8", errors="replace"))
    if batch:
        raise StoreLayoutError(
            f"{uri}: config/topics.json gives {', '.join(batch)}: the broker writes batchconsumequeue/ "
            "(BatchConsumeQueue) for such topics, not consumequeue/; this project does not rebuild BatchCQ queues")
    if "batchconsumequeue" in names and _has_files(fs, f"{root}/batchconsumequeue"):
        topics = sorted(i.base_name for i in _children(fs, f"{root}/batchconsumequeue")
                        if i.type == pafs.FileType.Directory)
        which = f" for topic(s) {', '.join(topics)}" if topics else ""
        raise StoreLayoutError(
            f"{uri}: batchconsumequeue/ holds BatchCQ consume queues{which} (queue.type=BatchCQ): this project "
            "does not rebuild BatchCQ queues")
    if not cq_ext and "consumequeue_ext" in names and _has_files(fs, f"{root}/consumequeue_ext"):
        raise StoreLayoutError(
            f"{uri}: consumequeue_ext/ holds ConsumeQueueExt files (enableConsumeQueueExt=true), but the settings "
            "say enableConsumeQueueExt=false: its consume queues store ext addresses instead of tag hash codes; pass "
            "the broker.conf the store was written with (--config), with enableConsumeQueueExt=true")
    if "consumequeue" in names:
        cq_files = {i.base_name for i in _children(fs, f"{root}/consumequeue") if i.type == pafs.FileType.File}
        if "CURRENT" in cq_files or any(n.startswith("MANIFEST-") for n in cq_files):
            raise StoreLayoutError(
                f"{uri}: consumequeue/ is a RocksDB database (CURRENT/MANIFEST files: RocksDBConsumeQueueStore, "
                "storeType=defaultRocksDB): this project rebuilds file-based consume queues only")
