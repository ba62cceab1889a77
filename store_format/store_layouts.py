"""Store layouts this project does not rebuild, or rebuilds only with the settings that made them,
recognised from the store's own contents, and the store's batch consume queue topics.

``broker.conf`` may not say how a store was written (the reviewer, an operator, a copied store), so
the folders and files a broker creates for the other layouts are looked for as well; each one is
refused with one line naming the layout, never rebuilt as ordinary consume queues.  Paths follow
``StorePathConfigHelper`` (4.9.8, 5.3.3, 5.5.1) and ``BrokerPathConfigHelper.getTopicConfigPath``:

* ``batchconsumequeue/`` (``getStorePathBatchConsumeQueue``; 5.x) is rebuilt
  (:mod:`store_format.batchconsumequeue`) for the topics whose ``queue.type`` attribute in
  ``config/topics.json`` is ``BatchCQ`` (:func:`store_batch_topics`); refused are the topic tables
  and folders a broker would not load, and any other queue type.
* ``consumequeue_ext/`` (``getStorePathConsumeQueueExt``): ``ConsumeQueueExt`` files, written with
  ``enableConsumeQueueExt=true``; the consume queue then stores ext addresses instead of tag hash codes
  (rebuilt by :mod:`store_format.consumequeue_ext`): refused only when the settings do not say
  ``enableConsumeQueueExt=true``.
* ``dledger-<selfId>/`` (``DLedgerCommitLog``; :mod:`store_format.dledger` reads it): refused only
  when the settings do not say ``enableDLegerCommitLog=true``.
* a RocksDB database in ``consumequeue/`` (``RocksDBConsumeQueueStore`` opens it at
  ``getStorePathConsumeQueue``; ``storeType=defaultRocksDB``), seen by its ``CURRENT`` and
  ``MANIFEST-*`` files: refused only when the settings say ``storeType=default``, and consume queue
  files there when they say ``storeType=defaultRocksDB``.
"""
from __future__ import annotations

import json
import re

import pyarrow.fs as pafs

from .batchconsumequeue import DEFAULT_BCQ_FILE_SIZE, bcq_file_size_error
from .errors import StoreLayoutError

__all__ = ["check_store_layout", "batch_cq_topics", "queue_types", "store_batch_topics",
           "refuse_rocksdb_cq"]

_DLEDGER_RE = re.compile(r"^dledger(-.*)?$")
_QUEUE_TYPE_KEY = "queue.type"   # TopicAttributes.QUEUE_TYPE_ATTRIBUTE (stored without the "+" of an update)
_SIMPLE_CQ = "SimpleCQ"
_BATCH_CQ = "BatchCQ"


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


def queue_types(topics_json: str) -> dict[str, str]:
    """Topic -> ``queue.type`` of the topics of a ``config/topics.json`` that set it, the key
    ``QueueTypeUtils.getCQType`` reads (``TopicAttributes.QUEUE_TYPE_ATTRIBUTE``; the ``+queue.type``
    of an update request is stored without its ``+``, and a stored ``+queue.type`` is not read).

    Raises:
        ValueError: the text is not JSON.
    """
    doc = json.loads(topics_json)
    table = doc.get("topicConfigTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        return {}
    found = {}
    for name, topic in sorted(table.items()):
        attrs = topic.get("attributes") if isinstance(topic, dict) else None
        if isinstance(attrs, dict) and _QUEUE_TYPE_KEY in attrs:
            found[name] = str(attrs[_QUEUE_TYPE_KEY])
    return found


def batch_cq_topics(topics_json: str) -> list[str]:
    """Topics of a ``config/topics.json`` whose consume queue type is not ``SimpleCQ`` (with the value),
    as ``QueueTypeUtils.getCQType`` reads ``TopicConfig.attributes``; [] for text that is not JSON."""
    try:
        types = queue_types(topics_json)
    except ValueError:
        return []
    return [f"{name} (queue.type={value})" for name, value in types.items() if value != _SIMPLE_CQ]


def _read_topic_table(fs: pafs.FileSystem, root: str, uri: str) -> dict[str, str]:
    """``queue.type`` by topic as a broker loads ``config/topics.json`` (``ConfigManager.load``): a
    missing or empty file falls back to ``topics.json.bak``, and so does one that does not parse."""
    texts = []
    for name in ("topics.json", "topics.json.bak"):
        path = f"{root}/config/{name}"
        if fs.get_file_info(path).type != pafs.FileType.File:
            texts.append("")
            continue
        with fs.open_input_stream(path) as f:
            texts.append(f.read().decode("utf-8", errors="replace"))
    main, bak = texts
    if main:
        try:
            return queue_types(main)
        except ValueError:
            # fastjson may read what Python's json does not: the types the broker saw are unknown
            raise StoreLayoutError(
                f"{uri}: config/topics.json is not JSON this project can read, so which topics are BatchCQ "
                "(queue.type) is unknown; restore the broker's topics.json (TopicConfigManager)") from None
    if bak:
        try:
            return queue_types(bak)
        except ValueError:
            raise StoreLayoutError(
                f"{uri}: config/topics.json is missing or empty and topics.json.bak is not JSON: the broker "
                "would not load its topic table (ConfigManager.loadBak)") from None
    return {}


def store_batch_topics(fs: pafs.FileSystem, root: str, uri: str, *, broker_version: str = "auto",
                       file_size: int = DEFAULT_BCQ_FILE_SIZE) -> frozenset[str]:
    """The store's BatchCQ topics, whose queues the reput writes into ``batchconsumequeue/``
    (``ConsumeQueueStore.findOrCreateConsumeQueue`` by ``QueueTypeUtils.getCQType`` of the topic
    table the broker loads from ``config/topics.json``; see :mod:`store_format.batchconsumequeue`).

    Raises:
        StoreLayoutError: what the broker cannot load or this project cannot rebuild the same: a
            ``queue.type`` other than ``SimpleCQ``/``BatchCQ`` (``CQType.valueOf`` throws on an unknown
            one; ``RocksDBCQ`` queues go to ``consumequeue/``, which ``ConsumeQueueStore.queueTypeShouldBe``
            then refuses to load), BatchCQ topics with ``brokerVersion=4`` (4.x has no batch queues) or
            with a ``mapperFileSizeBatchConsumeQueue`` that is not a multiple of 46, and queues in
            ``batchconsumequeue/`` of topics that are not BatchCQ (``queueTypeShouldBe`` throws).
    """
    names = {i.base_name for i in _children(fs, root)}
    types = _read_topic_table(fs, root, uri) if "config" in names else {}
    other = [f"{t} (queue.type={v})" for t, v in types.items() if v not in (_SIMPLE_CQ, _BATCH_CQ)]
    if other:
        raise StoreLayoutError(
            f"{uri}: config/topics.json gives {', '.join(other)}: only SimpleCQ (consumequeue/) and BatchCQ "
            "(batchconsumequeue/) queues are rebuilt (CQType; the broker cannot reload RocksDBCQ file queues)")
    batch = frozenset(t for t, v in types.items() if v == _BATCH_CQ)
    if "batchconsumequeue" in names and _has_files(fs, f"{root}/batchconsumequeue"):
        stray = sorted(i.base_name for i in _children(fs, f"{root}/batchconsumequeue")
                       if i.type == pafs.FileType.Directory and i.base_name not in batch
                       and _has_files(fs, f"{root}/batchconsumequeue/{i.base_name}"))
        if stray:
            raise StoreLayoutError(
                f"{uri}: batchconsumequeue/ holds BatchCQ consume queues of topic(s) {', '.join(stray)}, which "
                "config/topics.json does not give queue.type=BatchCQ: the broker refuses to load such a store "
                "(ConsumeQueueStore.queueTypeShouldBe); restore the broker's config/topics.json")
    if batch and broker_version == "4":
        raise StoreLayoutError(
            f"{uri}: config/topics.json gives queue.type=BatchCQ to {', '.join(sorted(batch))}, but brokerVersion=4: "
            "batch consume queues (batchconsumequeue/) exist in 5.x only; pass the broker line the store was "
            "written with (5 or 5.5)")
    size_error = bcq_file_size_error(file_size) if batch else None
    if size_error:
        raise StoreLayoutError(f"{uri}: BatchCQ topics {', '.join(sorted(batch))}: {size_error}")
    return batch


def check_store_layout(fs: pafs.FileSystem, root: str, uri: str, *, dledger: bool = False,
                       cq_ext: bool = False, rocksdb_cq: bool = False) -> None:
    """Refuse a store laid out in a way this project does not rebuild (module docstring).

    ``dledger``: the settings say ``enableDLegerCommitLog=true`` (:mod:`store_format.dledger` reads
    it); without it a ``dledger-*`` folder is refused, since the settings the store was written with
    are then not the ones given.  ``cq_ext``: the same for ``enableConsumeQueueExt=true`` and a
    ``consumequeue_ext/`` folder; ``rocksdb_cq``: for ``storeType=defaultRocksDB`` and a RocksDB
    database in ``consumequeue/`` (and, the other way round, consume queue files there).

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
    if not cq_ext and "consumequeue_ext" in names and _has_files(fs, f"{root}/consumequeue_ext"):
        raise StoreLayoutError(
            f"{uri}: consumequeue_ext/ holds ConsumeQueueExt files (enableConsumeQueueExt=true), but the settings "
            "say enableConsumeQueueExt=false: its consume queues store ext addresses instead of tag hash codes; pass "
            "the broker.conf the store was written with (--config), with enableConsumeQueueExt=true")
    if "consumequeue" in names:
        cq_files = {i.base_name for i in _children(fs, f"{root}/consumequeue") if i.type == pafs.FileType.File}
        is_rocksdb = "CURRENT" in cq_files or any(n.startswith("MANIFEST-") for n in cq_files)
        if is_rocksdb and not rocksdb_cq:
            raise StoreLayoutError(
                f"{uri}: consumequeue/ is a RocksDB database (CURRENT/MANIFEST files: RocksDBConsumeQueueStore), but "
                "the settings say storeType=default: pass the broker.conf the store was written with (--config), with "
                "storeType=defaultRocksDB")
        topic_dirs = [i.base_name for i in _children(fs, f"{root}/consumequeue") if i.type == pafs.FileType.Directory]
        if rocksdb_cq and not is_rocksdb and topic_dirs:
            raise StoreLayoutError(
                f"{uri}: consumequeue/ holds consume queue files (topic folders such as {sorted(topic_dirs)[0]}/), but "
                "the settings say storeType=defaultRocksDB, whose consume queue is a RocksDB database there: pass the "
                "broker.conf the store was written with (--config)")


def refuse_rocksdb_cq(uri: str, rocksdb_cq: bool, what: str) -> None:
    """Refuse a command that does not handle the RocksDB consume queue (``storeType=defaultRocksDB``,
    :mod:`store_format.rocksdb_cq`) on such a store.

    Raises:
        StoreLayoutError: one line naming the command and the layout.
    """
    if rocksdb_cq:
        raise StoreLayoutError(
            f"{uri}: storeType=defaultRocksDB (a RocksDB consume queue): {what}; rebuild writes its consume queue "
            "database and index/ (with --no-tables)")
