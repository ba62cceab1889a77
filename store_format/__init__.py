"""RocketMQ store formats and the broker's reput semantics as vectorized kernels (no Spark).

Modules:
    layout       byte layouts of commitlog records, consume queue units, index files
    config       broker.conf parsing and MessageStoreConfig defaults
    store        finding and reading store segments through pyarrow.fs
    commitlog    the record walk (CommitLog.checkMessageAndReturnSize in the doReput loop)
    walkkernel   the walk's numba kernels (the doReput loop over one window)
    javahash     Java String.hashCode over UTF-16, IndexFile.indexKeyHashMethod
    dispatch     consume queue units and index keys of walked records
    consumequeue ConsumeQueue.putMessagePositionInfo / fillPreBlank
    consumequeue_recovery  MappedFileQueue.doLoad, ConsumeQueue.recover / truncateDirtyLogicFiles at a start
                 (BatchConsumeQueue's too)
    consumequeue_ext_recovery  ConsumeQueueExt.recover / truncateByMaxAddress at a start
    indexfile    IndexService.buildIndex / IndexFile.putKey / selectPhyOffset
    reput        doReput over segments, and a sequential in-memory rebuild (the reference)
    writer       a commitlog writer laying records out as the broker does (sample data, tests)
    msgid        offset msgId codec (MessageDecoder.createMessageId / decodeMessageId)
    kernel_cache where numba keeps the compiled kernels (a folder keyed by these sources)
"""
from pathlib import Path as _Path

from .kernel_cache import use_keyed_cache as _use_keyed_cache

_use_keyed_cache(_Path(__file__).parent)   # before any kernel is decorated: kernel_cache says why

from .config import BrokerConfig, load_broker_config  # noqa: E402
from .errors import CorruptStoreError, StoreError, StoreLayoutError, UnsupportedConfigError  # noqa: E402

__all__ = ["BrokerConfig", "load_broker_config", "StoreError", "StoreLayoutError", "UnsupportedConfigError",
           "CorruptStoreError"]
