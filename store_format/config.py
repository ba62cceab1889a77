"""Broker settings that shape the store files, read from ``broker.conf`` with the broker's defaults.

Mirrors ``MessageStoreConfig`` (field defaults and getters) and the delay-level table of
``ScheduleMessageService.parseDelayLevel`` / ``DefaultMessageStore.parseDelayLevel`` (5.x).

``broker.conf`` is read the way the broker reads it: ``java.util.Properties.load`` (its
``LineReader``, separators and escapes; :func:`read_properties`), then
``MixAll.properties2Object`` (``BrokerStartup``), which hands each key to the setter of that
name and parses the value with ``Integer.parseInt``, ``Long.parseLong`` or ``Boolean.parseBoolean``
and silently ignores a value that does not parse.  Because the broker ignores what it cannot use,
a typo silently gives the broker's default; so :func:`load_broker_config` checks every line first:

* a line that cannot be a setting (Properties rejects it, it has no key, or its key is not a name)
  is an error with its line number;
* a setting this project reproduces whose value the broker would not take (``maxIndexNum=abc``,
  ``maxIndexNum=20000 `` with a trailing blank, a number beyond a Java int) or whose value the
  broker cannot use (an index file over 2 GiB) is an error saying what would be accepted;
* a key that is no broker or store setting is a warning (the broker ignores it), with "did you
  mean" for near misses (``mapedFileSizeConsumeQueue`` → ``mappedFileSizeConsumeQueue``).

Long module: java.util.Properties' reading rules, every setting name of the 4.9.8 and 5.3.3 config
classes, and the checks of the values.
"""
from __future__ import annotations

import dataclasses
import difflib
import logging
import re
import unicodedata
from collections.abc import Mapping

from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE, INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE

__all__ = ["BrokerConfig", "parse_java_properties", "read_properties", "PropertyLine", "load_broker_config",
           "parse_delay_levels", "STORE_SETTINGS", "KNOWN_SETTINGS", "JAVA_INT_MAX", "JAVA_LONG_MAX"]

log = logging.getLogger(__name__)

DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_TIME_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

BROKER_LINES = ("4", "5", "5.5", "auto")   # brokerVersion values

JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1

# ---------------------------------------------------------------------------------------------
# The keys a broker.conf can set.  BrokerStartup (4.9.8 and 5.3.3) passes the properties to
# MixAll.properties2Object for BrokerConfig (5.3.3: with BrokerIdentity), NettyServerConfig,
# NettyClientConfig, MessageStoreConfig and (5.3.3) AuthConfig; the tiered store plugin (5.3.3,
# tieredstore MessageStoreConfig) registers its own; BrokerStartup.properties2SystemEnv reads
# rmqAddressServerDomain/rmqAddressServerSubGroup.  A key is the name of a public setter minus "set"
# with its first letter lowered, for setters taking int/long/double/float/boolean (or boxed) or
# String: the only ones properties2Object calls.  Listed from the setters of those classes at the
# tags rocketmq-all-4.9.8 and rocketmq-all-5.3.3 (union of both); ":int", ":long", ":boolean",
# ":double" give the parameter's Java type, no suffix a String.

# org.apache.rocketmq.store.config.MessageStoreConfig
_STORE_SETTINGS_TEXT = (
    "accessMessageInMemoryHotRatio:int accessMessageInMemoryMaxRatio:int allAckInSyncStateSet:boolean "
    "asyncLearner:boolean autoMessageVersionOnTopicLen:boolean batchDispatchRequestThreadPoolNums:int "
    "bitMapLengthConsumeQueueExt:int bottomMostCompressionTypeForConsumeQueueStore brokerRole "
    "checkCRCOnRecover:boolean cleanFileForciblyEnable:boolean cleanResourceInterval:int "
    "cleanRocksDBDirtyCQIntervalMin:long cleanSwapedMapInterval:long coldDataFlowControlEnable:boolean "
    "coldDataScanEnable:boolean commitCommitLogLeastPages:int commitCommitLogThoroughInterval:int "
    "commitIntervalCommitLog:int commitLogForceSwapMapInterval:long commitLogSwapMapInterval:long "
    "commitLogSwapMapReserveFileNum:int compactionCqMappedFileSize:int compactionMappedFileSize:int "
    "compactionScheduleInternal:int compactionThreadNum:int correctLogicMinOffsetForceInterval:int "
    "correctLogicMinOffsetSleepInterval:int dLegerGroup dLegerPeers dLegerSelfId dataReadAheadEnable:boolean "
    "debugLockEnable:boolean defaultQueryMaxNum:int deleteCommitLogFilesInterval:int "
    "deleteConsumeQueueFilesInterval:int deleteFileBatchMax:int deleteWhen destroyMapedFileIntervalForcibly:int "
    "disappearTimeAfterStart:int diskFallRecorded:boolean diskMaxUsedSpaceRatio:int diskSpaceCleanForciblyRatio:int "
    "diskSpaceWarningLevelRatio:int dispatchCqCacheNum:int dispatchCqThreads:int dispatchFromSenderThread:boolean "
    "duplicationEnable:boolean enableAsyncReput:boolean enableAutoInSyncReplicas:boolean enableBatchPush:boolean "
    "enableBuildConsumeQueueConcurrently:boolean enableCleanExpiredOffset:boolean enableCompaction:boolean "
    "enableConsumeQueueExt:boolean enableDLegerCommitLog:boolean enableLmq:boolean enableMultiDispatch:boolean "
    "enableRocksDBLog:boolean enableScheduleAsyncDeliver:boolean enableScheduleMessageStats:boolean "
    "enabledAppendPropCRC:boolean fastFailIfNoBufferInStorePool:boolean fileReservedTime:int "
    "flushCommitLogLeastPages:int flushCommitLogThoroughInterval:int flushCommitLogTimed:boolean "
    "flushConsumeQueueLeastPages:int flushConsumeQueueThoroughInterval:int flushDelayOffsetInterval:long "
    "flushDiskType flushIntervalCommitLog:int flushIntervalConsumeQueue:int flushLeastPagesWhenWarmMapedFile:int "
    "forceVerifyPropCRC:boolean haFlowControlEnable:boolean haHousekeepingInterval:int haListenPort:int "
    "haMasterAddress haMaxGapNotInSync:int haMaxTimeSlaveNotCatchup:long haSendHeartbeatInterval:int "
    "haSlaveFallbehindMax:int haTransferBatchSize:int inSyncReplicas:int logicQueueForceSwapMapInterval:long "
    "logicQueueSwapMapInterval:long logicQueueSwapMapReserveFileNum:int "
    "logicalDiskSpaceCleanForciblyThreshold:double mappedFileSizeCommitLog:int mappedFileSizeConsumeQueue:int "
    "mappedFileSizeConsumeQueueExt:int mappedFileSizeTimerLog:int mappedFileSwapEnable:boolean "
    "mapperFileSizeBatchConsumeQueue:int maxAsyncPutMessageRequests:int maxBatchDeleteFilesNum:int "
    "maxChecksumRange:long maxConsumeQueueScan:int maxFilterMessageSize:int maxHaTransferByteInSecond:long "
    "maxHashSlotNum:int maxIndexNum:int maxLmqConsumeQueueNum:int maxMessageSize:int maxMsgsNumBatch:int "
    "maxOffsetMapSize:int maxRecoveryCommitlogFiles:int maxSlaveResendLength:long maxTopicLength:int "
    "maxTransferBytesOnMessageInDisk:int maxTransferBytesOnMessageInMemory:int maxTransferCountOnMessageInDisk:int "
    "maxTransferCountOnMessageInMemory:int memTableFlushIntervalMs:long messageDelayLevel "
    "messageIndexEnable:boolean messageIndexSafe:boolean minInSyncReplicas:int offsetCheckInSlave:boolean "
    "osPageCacheBusyTimeOutMills:long preferredLeaderId pullBatchMaxMessageCount:int "
    "putConsumeQueueDataByFileChannel:boolean putMessageTimeout:int putMsgIndexHightWater:int "
    "readOnlyCommitLogStorePaths readUnCommitted:boolean realTimePersistRocksDBConfig:boolean "
    "recheckReputOffsetFromCq:boolean redeleteHangedFileInterval:int replicasPerDiskPartition:int "
    "rocksdbCQDoubleWriteEnable:boolean rocksdbCompressionType rocksdbFlushWalFrequency:int "
    "rocksdbWalFileRollingThreshold:long sampleCountThreshold:int sampleSteps:int "
    "scheduleAsyncDeliverMaxPendingLimit:int scheduleAsyncDeliverMaxResendNum2Blocked:int "
    "searchBcqByCacheEnable:boolean slaveTimeout:int spinLockCollisionRetreatOptimalDegree:int "
    "statRocksDBCQIntervalSec:long storePathBrokerIdentity storePathCommitLog storePathDLedgerCommitLog "
    "storePathEpochFile storePathRootDir storeType syncFlushTimeout:int syncFromLastFile:boolean "
    "syncMasterFlushOffsetWhenStartup:boolean timerColdDataCheckIntervalMs:int timerCongestNumEachSlot:int "
    "timerEnableCheckMetrics:boolean timerEnableRetryUntilSuccess:boolean timerFlushIntervalMs:int "
    "timerGetMessageThreadNum:int timerInterceptDelayLevel:boolean timerMaxDelaySec:int "
    "timerMetricSmallThreshold:int timerPrecisionMs:int timerProgressLogIntervalMs:int timerPutMessageThreadNum:int "
    "timerRollWindowSlot:int timerSkipUnknownError:boolean timerStopEnqueue:boolean timerWheelEnable:boolean "
    "topicQueueLockNum:int totalReplicas:int transientStorePoolEnable:boolean transientStorePoolSize:int "
    "travelCqFileNumWhenGetMessage:int useABSLock:boolean useReentrantLockWhenPutMessage:boolean "
    "wakeCommitWhenPutMessage:boolean wakeFlushWhenPutMessage:boolean warmMapedFileEnable:boolean "
)
# MessageStoreConfig setters added by rocketmq-store 5.5.1 (the published sources jar)
_STORE_SETTINGS_551_TEXT = (
    "appendTopicForTimerDeleteKey:boolean checkCommitLogOffsetOnRecover:boolean combineAssignOffsetCQType "
    "combineCQEnableCheckSelf:boolean combineCQLoadingCQTypes combineCQMaxExtraSearchCommitLogFiles:int "
    "combineCQPreferCQType combineCQUseRocksdbForLmq:boolean commitLogRecoverMaxNum:int "
    "correctMinOffsetMadviseEnable:boolean enableAcceleratedRecovery:boolean enableLmqQuota:boolean "
    "enableRunningFlagsInFlush:boolean indexFileReadEnable:boolean indexFileWriteEnable:boolean "
    "indexRocksDBEnable:boolean iteratorWhenUseRocksdbConsumeQueue:boolean maxCheckMessageReuseBufferSize:int "
    "maxRocksDBIndexQueryDays:int popRocksdbBlockCacheSize:long popRocksdbWriteBufferSize:long "
    "rocksdbCQSelectiveDoubleWriteEnable:boolean rocksdbMaxSizeAmplificationPercent:int "
    "sharedByteBufferNum:int timerRecallToTimeWheelEnable:boolean timerRecallToTimelineEnable:boolean "
    "timerReputServiceCorePoolSize:int timerReputServiceMaxPoolSize:int timerReputServiceQueueCapacity:int "
    "timerRocksDBEnable:boolean timerRocksDBPrecisionMs:long timerRocksDBRollIntervalHours:int "
    "timerRocksDBRollMaxTps:double timerRocksDBRollRangeHours:int timerRocksDBStopScan:boolean "
    "timerRocksDBTimeExpiredMaxTps:double timerWheelSnapshotFlush:boolean timerWheelSnapshotIntervalMs:int "
    "transRocksDBEnable:boolean transWriteOriginTransHalfEnable:boolean "
    "useSeparateStorePathForRocksdbCQ:boolean writeWithoutMmap:boolean "
)
# BrokerConfig, BrokerIdentity, NettyServerConfig, NettyClientConfig, AuthConfig, tieredstore
# MessageStoreConfig, properties2SystemEnv (names already in MessageStoreConfig left out)
_OTHER_BROKER_SETTINGS_TEXT = (
    "accountStatsEnable:boolean accountStatsPrintZeroValues:boolean ackMessageThreadPoolNums:int "
    "ackThreadPoolQueueCapacity:int aclCacheExpiredSecond:int aclCacheMaxNum:int aclCacheRefreshSecond:int "
    "aclEnable:boolean adminBrokerThreadPoolNums:int adminBrokerThreadPoolQueueCapacity:int "
    "allowRecallWhenBrokerNotWriteable:boolean appendAckAsync:boolean appendCkAsync:boolean asyncSendEnable:boolean "
    "authConfigPath authenticationEnabled:boolean authenticationMetadataProvider authenticationProvider "
    "authenticationStrategy authenticationWhitelist authorizationEnabled:boolean authorizationMetadataProvider "
    "authorizationProvider authorizationStrategy authorizationWhitelist autoCreateSubscriptionGroup:boolean "
    "autoCreateTopicEnable:boolean autoDeleteUnusedStats:boolean bindAddress broadcastOffsetExpireMaxSecond:long "
    "broadcastOffsetExpireSecond:long brokerClusterName brokerConfigPath brokerElectionPriority:int "
    "brokerFastFailureEnable:boolean brokerHeartbeatInterval:int brokerIP1 brokerIP2 brokerId:long brokerName "
    "brokerNotActiveTimeoutMillis:long brokerPermission:int brokerTopicEnable:boolean cgColdReadThreshold:long "
    "channelExpiredTimeout:long channelNotActiveInterval:long checkSyncStateSetPeriod:long "
    "cleanOfflineBrokerInterval:int clearRetryTopicWhenDeleteTopic:boolean clientAsyncSemaphoreValue:int "
    "clientCallbackExecutorThreads:int clientChannelMaxIdleTimeSeconds:int clientCloseSocketIfTimeout:boolean "
    "clientManageThreadPoolNums:int clientManagerThreadPoolQueueCapacity:int clientOnewaySemaphoreValue:int "
    "clientPooledByteBufAllocatorEnable:boolean clientSocketRcvBufSize:int clientSocketSndBufSize:int "
    "clientWorkerThreads:int clusterName clusterTopicEnable:boolean coldCtrStrategyEnable:boolean "
    "commercialBaseCount:int commercialBigCount:int commercialEnable:boolean commercialSizePerMsg:int "
    "commercialTimerCount:int commercialTransCount:int commitLogRollingInterval:int commitLogRollingMinimumSize:int "
    "compatibleWithOldNameSrv:boolean compressedRegister:boolean configBlackList configManagerVersion configName "
    "connectTimeoutMillis:int consumerFallbehindThreshold:long consumerManageThreadPoolNums:int "
    "consumerManagerThreadPoolQueueCapacity:int consumerOffsetUpdateVersionStep:long controllerAddr "
    "controllerHeartBeatTimeoutMills:long defaultMessageRequestMode defaultPopShareQueueNum:int "
    "defaultTopicQueueNums:int delayOffsetUpdateVersionStep:long disableCallbackExecutor:boolean "
    "disableConsumeIfConsumerReadSlowly:boolean disableNettyWorkerGroup:boolean enableBroadcastOffsetStore:boolean "
    "enableCalcFilterBitMap:boolean enableControllerMode:boolean enableCreateSysGroup:boolean "
    "enableDetailStat:boolean enableFastChannelEventProcess:boolean enableLmqStats:boolean "
    "enableMixedMessageType:boolean enableNetWorkFlowControl:boolean enableNotifyAfterPopOrderLockRelease:boolean "
    "enableNotifyBeforePopCalculateLag:boolean enablePopBatchAck:boolean enablePopBufferMerge:boolean "
    "enablePopLog:boolean enablePopMessageThreshold:boolean enablePropertyFilter:boolean "
    "enableReconnectForGoAway:boolean enableRegisterProducer:boolean enableRemoteEscape:boolean "
    "enableRetryTopicV2:boolean enableShutdownGracefully:boolean enableSingleTopicRegister:boolean "
    "enableSkipLongAwaitingAck:boolean enableSlaveActingMaster:boolean enableSplitRegistration:boolean "
    "endTransactionPoolQueueCapacity:int endTransactionThreadPoolNums:int estimateAccumulation:boolean "
    "expectConsumerNumUseFilter:int fetchControllerAddrByDnsLookup:boolean fetchNameSrvAddrByDnsLookup:boolean "
    "fetchNamesrvAddrByAddressServer:boolean fetchNamesrvAddrInterval:long filterDataCleanTimeSpan:long "
    "filterServerNums:int filterSupportRetry:boolean flushConsumerOffsetHistoryInterval:int "
    "flushConsumerOffsetInterval:int forceRegister:boolean forwardTimeout:long globalColdReadThreshold:long "
    "heartbeatThreadPoolNums:int heartbeatThreadPoolQueueCapacity:int highSpeedMode:boolean "
    "inBrokerContainer:boolean initAuthenticationUser initPopOffsetByCheckMsgInMem:boolean "
    "innerClientAuthenticationCredentials isolateLogEnable:boolean listenPort:int litePullMessageEnable:boolean "
    "litePullMessageThreadPoolNums:int litePullThreadPoolQueueCapacity:int loadBalancePollNameServerInterval:long "
    "loadBalanceProcessorThreadPoolNums:int loadBalanceThreadPoolQueueCapacity:int lockInStrictMode:boolean "
    "longPollingEnable:boolean maxDelayTime:int maxErrorRateOfBloomFilter:int maxPopPollingSize:long "
    "maxReconnectIntervalTimeSeconds:long maxStatsIdleTimeInMinutes:int messageStorePlugIn "
    "metricGrpcExporterIntervalInMills:long metricGrpcExporterTimeOutInMills:long "
    "metricLoggingExporterIntervalInMills:long metricsExporterType metricsGrpcExporterHeader "
    "metricsGrpcExporterTarget metricsInDelta:boolean metricsLabel metricsOtelCardinalityLimit:int "
    "metricsPromExporterHost metricsPromExporterPort:int migrateAuthFromV1Enabled:boolean msgTraceTopicName "
    "namesrvAddr notifyConsumerIdsChangedEnable:boolean objectStoreAccessKey objectStoreBucket objectStoreEndpoint "
    "objectStoreSecretKey popCkMaxBufferSize:int popCkOffsetMaxQueueSize:int popCkStayBufferTime:int "
    "popCkStayBufferTimeOut:int popConsumerFSServiceInit:boolean popConsumerKVServiceEnable:boolean "
    "popConsumerKVServiceInit:boolean popConsumerKVServiceLog:boolean popFromRetryProbability:int "
    "popInflightMessageThreshold:long popLongPollingForceNotifyInterval:long popPollingMapSize:int "
    "popPollingSize:int popResponseReturnActualRetryTopic:boolean popReviveMaxAttemptTimes:int "
    "popReviveMaxReturnSizePerRead:int printChannelGroups:boolean printChannelGroupsMinNum:int "
    "processReplyMessageThreadPoolNums:int pullMessageThreadPoolNums:int pullThreadPoolQueueCapacity:int "
    "putMessageFutureThreadPoolNums:int putThreadPoolQueueCapacity:int queryMessageThreadPoolNums:int "
    "queryThreadPoolQueueCapacity:int readAheadCacheEnable:boolean readAheadCacheExpireDuration:long "
    "readAheadCacheSizeThresholdRate:double readAheadMessageCountThreshold:int readAheadMessageSizeThreshold:int "
    "realTimeNotifyConsumerChange:boolean recallMessageEnable:boolean recordGetMessageResult:boolean "
    "recoverConcurrently:boolean recoverThreadPoolNums:int regionId registerBrokerTimeoutMills:int "
    "registerNameServerPeriod:int rejectPullConsumerEnable:boolean rejectTransactionMessage:boolean "
    "replyThreadPoolQueueCapacity:int retrieveMessageFromPopRetryTopicV1:boolean reviveAckWaitMs:long "
    "reviveInterval:long reviveMaxSlow:long reviveQueueNum:int reviveScanTime:long rmqAddressServerDomain "
    "rmqAddressServerSubGroup rocketmqHome scanAvailableNameSrv:boolean sendHeartbeatTimeoutMillis:int "
    "sendMessageThreadPoolNums:int sendThreadPoolQueueCapacity:int serverAsyncSemaphoreValue:int "
    "serverCallbackExecutorThreads:int serverChannelMaxIdleTimeSeconds:int serverLoadBalancerEnable:boolean "
    "serverNettyWorkerGroupEnable:boolean serverOnewaySemaphoreValue:int serverPooledByteBufAllocatorEnable:boolean "
    "serverSelectorThreads:int serverSocketBacklog:int serverSocketRcvBufSize:int serverSocketSndBufSize:int "
    "serverWorkerThreads:int shortPollingTimeMills:long shutdownWaitTimeSeconds:int skipPreOnline:boolean "
    "skipWhenCKRePutReachMaxTimes:boolean slaveReadEnable:boolean socksProxyConfig splitRegistrationSize:int "
    "startAcceptSendRequestTimeStamp:long statefulAuthenticationCacheExpiredSecond:int "
    "statefulAuthenticationCacheMaxNum:int statefulAuthorizationCacheExpiredSecond:int "
    "statefulAuthorizationCacheMaxNum:int storeReplyMessageEnable:boolean subscriptionExpiredTimeout:long "
    "syncBrokerMemberGroupPeriod:int syncBrokerMetadataPeriod:long syncControllerMetadataPeriod:long "
    "tieredBackendServiceProvider tieredMetadataServiceProvider tieredStorageLevel tieredStoreCommitLogMaxSize:long "
    "tieredStoreConsumeQueueMaxSize:long tieredStoreCrcCheckEnable:boolean tieredStoreDeleteFileEnable:boolean "
    "tieredStoreDeleteFileInterval:long tieredStoreFilePath tieredStoreFileReservedTime:int "
    "tieredStoreGroupCommit:boolean tieredStoreGroupCommitCount:int tieredStoreGroupCommitSize:int "
    "tieredStoreGroupCommitTimeout:int tieredStoreIndexFileMaxHashSlotNum:int tieredStoreIndexFileMaxIndexNum:int "
    "tieredStoreMaxGroupCommitCount:int tieredStoreMaxPendingLimit:int traceOn:boolean traceTopicEnable:boolean "
    "transactionCheckInterval:long transactionCheckMax:int transactionMetricFlushInterval:long "
    "transactionOpBatchInterval:int transactionOpMsgMaxSize:int transactionTimeOut:long transferMsgByHeap:boolean "
    "updateNameServerAddrPeriod:int useEpollNativeSelector:boolean usePIDColdCtrStrategy:boolean "
    "useServerSideResetOffset:boolean useStaticSubscription:boolean useTLS:boolean userCacheExpiredSecond:int "
    "userCacheMaxNum:int userCacheRefreshSecond:int validateSystemTopicWhenUpdateTopic:boolean "
    "waitTimeMillsInAckQueue:long waitTimeMillsInAdminBrokerQueue:long waitTimeMillsInHeartbeatQueue:long "
    "waitTimeMillsInLitePullQueue:long waitTimeMillsInPullQueue:long waitTimeMillsInSendQueue:long "
    "waitTimeMillsInTransactionQueue:long writeBufferHighWaterMark:int writeBufferLowWaterMark:int "
)
# settings of this project, not of the broker
_PROJECT_SETTINGS = {"brokerVersion": "String"}


def _setting_types(text: str) -> dict[str, str]:
    types: dict[str, str] = {}
    for token in text.split():
        name, _, java_type = token.partition(":")
        types[name] = java_type or "String"
    return types


_STORE_TYPES = _setting_types(_STORE_SETTINGS_TEXT + _STORE_SETTINGS_551_TEXT)
_SETTING_TYPES = {**_setting_types(_OTHER_BROKER_SETTINGS_TEXT), **_STORE_TYPES, **_PROJECT_SETTINGS}
STORE_SETTINGS = frozenset(_STORE_TYPES)
KNOWN_SETTINGS = frozenset(_SETTING_TYPES)
# what a key must look like to name any setting at all (a Java identifier, or dotted names used by
# plugins); anything else on a line is not a property the user meant
_KEY_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.\-]*\Z")


# ---------------------------------------------------------------------------------------------
# java.util.Properties.load


@dataclasses.dataclass(frozen=True)
class PropertyLine:
    """One entry of a properties text, as ``Properties.load`` reads it."""
    line: int    # 1-based physical line where the entry starts (continuations follow it)
    key: str
    value: str
    text: str    # the logical line as read, escapes not converted (for messages)


_BLANKS = " \t\f"


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Logical lines with their first physical line number, as ``Properties.LineReader.readLine``
    (JDK 9+) cuts them: ``\\n``, ``\\r`` or ``\\r\\n`` end a line; leading blanks (space, tab, form
    feed) and blank lines are skipped; a line whose first character is ``#`` or ``!`` is a comment
    (and never continues); an odd number of backslashes at the end joins the next line, whose
    leading blanks are dropped."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    line_no = 1
    start = 1
    skip_blanks = True
    appended_line_begin = False
    preceding_backslash = False
    in_comment = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if c == "\r" or c == "\n":
            at_eof = i >= n  # the input ends with this line break
            line_no += 1
            if c == "\r" and i < n and text[i] == "\n":
                i += 1
            if in_comment:
                in_comment = False
                skip_blanks = True
                continue
            if skip_blanks and not appended_line_begin:
                continue
            skip_blanks = False
            appended_line_begin = False
            if not buf:
                skip_blanks = True
                continue
            if at_eof:
                break  # as at the end of the input, below
            if preceding_backslash:
                buf.pop()
                skip_blanks = True
                appended_line_begin = True
                preceding_backslash = False
                continue
            out.append((start, "".join(buf)))
            buf = []
            skip_blanks = True
            continue
        if in_comment:
            continue
        if skip_blanks:
            if c in _BLANKS:
                continue
            skip_blanks = False
            appended_line_begin = False
        if not buf:
            if c in "#!":
                in_comment = True
                continue
            start = line_no
        buf.append(c)
        preceding_backslash = (not preceding_backslash) if c == "\\" else False
    if buf:
        out.append((start, "".join(buf[:-1] if preceding_backslash else buf)))
    return out


class _MalformedEscape(ValueError):
    pass


def _convert(s: str) -> str:
    """``Properties.loadConvert``: ``\\uXXXX``, ``\\t \\n \\r \\f``, and ``\\x`` → ``x``."""
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _MalformedEscape(f"\\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c))
    return "".join(out)


def _split_entry(line: str) -> tuple[str, str]:
    """Key and value of a logical line (``Properties.load0``): the key ends at the first unescaped
    ``=``, ``:`` or blank; blanks, then one ``=`` or ``:``, then blanks separate it from the value."""
    key_len, n = 0, len(line)
    value_start = n
    has_sep = False
    backslash = False
    while key_len < n:
        c = line[key_len]
        if c in "=:" and not backslash:
            value_start = key_len + 1
            has_sep = True
            break
        if c in _BLANKS and not backslash:
            value_start = key_len + 1
            break
        backslash = (not backslash) if c == "\\" else False
        key_len += 1
    while value_start < n:
        c = line[value_start]
        if c not in _BLANKS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_len], line[value_start:]


def read_properties(text: str) -> list[PropertyLine]:
    """Every entry of a ``.properties`` text in order, as ``java.util.Properties.load`` reads it.

    Raises:
        UnsupportedConfigError: a malformed ``\\uXXXX`` escape, which ``Properties.load`` rejects
            (a broker does not start with it), naming the line.
    """
    entries = []
    for line_no, logical in _logical_lines(text):
        key, value = _split_entry(logical)
        try:
            entries.append(PropertyLine(line_no, _convert(key), _convert(value), logical))
        except _MalformedEscape as e:
            raise UnsupportedConfigError(
                f"broker.conf line {line_no}: malformed unicode escape {e} in {logical[:80]!r}: Java's "
                "Properties.load rejects it (the broker would not start); write \\u and four hex digits, "
                "or the character itself") from None
    return entries


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value``, ``key: value``, ``key value``, ``#``/``!``
    comments, backslash line continuations and escapes) as ``java.util.Properties.load`` does;
    a key given twice keeps its last value."""
    return {e.key: e.value for e in read_properties(text)}


# ---------------------------------------------------------------------------------------------
# MixAll.properties2Object: how the broker turns a value into a setting


def _java_integer(value: str, bits: int) -> int | None:
    """``Integer.parseInt`` (bits 32) / ``Long.parseLong`` (64): an optional sign and decimal digits
    (Unicode digits too, as ``Character.digit``), nothing else, within range; None if it throws."""
    body = value[1:] if value[:1] in "+-" else value
    if not body:
        return None
    digits = []
    for ch in body:
        d = unicodedata.decimal(ch, None)
        if d is None:
            return None
        digits.append(str(d))
    number = int("".join(digits)) * (-1 if value[:1] == "-" else 1)
    if not -(2 ** (bits - 1)) <= number <= 2 ** (bits - 1) - 1:
        return None
    return number


def _java_boolean(value: str) -> bool:
    """``Boolean.parseBoolean``: true only for "true" in any case, nothing trimmed."""
    return value.lower() == "true"


_JAVA_DOUBLE_RE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)\Z")


def _java_double_ok(value: str) -> bool:
    """Whether ``Double.parseDouble`` takes the value: it trims blanks and control characters,
    then reads a decimal literal (optionally ending in f/F/d/D), NaN or Infinity (hexadecimal
    literals left out)."""
    return bool(_JAVA_DOUBLE_RE.match(value.strip(" \t\n\r\f\v\x00")))


def _where(line: int | None) -> str:
    return f"broker.conf line {line}: " if line else ""


def _near_miss(key: str) -> str | None:
    """The store setting (else any broker setting) a misspelt key most likely meant, or None."""
    for pool in (STORE_SETTINGS, KNOWN_SETTINGS):
        match = difflib.get_close_matches(key, pool, n=1, cutoff=0.8)
        if match:
            return match[0]
        lowered = {name.lower(): name for name in pool}
        if key.lower() in lowered:
            return lowered[key.lower()]
    return None


def _check_entries(entries: list[PropertyLine]) -> None:
    """Errors for lines that cannot be a setting, warnings for keys the broker ignores, repeated
    keys and values the broker would not take for settings this project does not use."""
    seen: dict[str, int] = {}
    fields = {f.name: f for f in dataclasses.fields(BrokerConfig)}
    for e in entries:
        where = _where(e.line)
        if not e.key:
            raise UnsupportedConfigError(
                f"{where}{e.text[:80]!r} is not a property: it has no key before '=' or ':'; write name=value, "
                "or start the line with # to make it a comment")
        if not _KEY_RE.match(e.key):
            raise UnsupportedConfigError(
                f"{where}{e.text[:80]!r} is not a property: {e.key[:60]!r} cannot name a broker setting (names "
                "are letters and digits such as maxIndexNum); write name=value, or start the line with # to "
                "make it a comment")
        if e.key in seen:
            log.warning("%s%s is set again (line %d): the broker keeps the last value, %r", where, e.key,
                        seen[e.key], e.value)
        seen[e.key] = e.line
        java_type = _SETTING_TYPES.get(e.key)
        if java_type is None:
            target = _near_miss(e.key)
            hint = f"; did you mean {target}?" if target else ""
            if target in fields:
                hint += f" (it shapes the rebuilt files; without it {target} keeps {fields[target].default!r})"
            log.warning("%s%s is no broker or store setting: the broker ignores it%s", where, e.key, hint)
            continue
        if e.key in fields:
            continue  # checked, with errors, when the config is built
        if java_type in ("int", "long") and _java_integer(e.value, 32 if java_type == "int" else 64) is None:
            log.warning("%s%s=%r is not a Java %s (%s): the broker ignores this line", where, e.key, e.value,
                        java_type, "Integer.parseInt" if java_type == "int" else "Long.parseLong")
        elif java_type == "boolean" and e.value.lower() not in ("true", "false"):
            log.warning("%s%s=%r is read as false by the broker (Boolean.parseBoolean takes only true or false)",
                        where, e.key, e.value)
        elif java_type == "double" and not _java_double_ok(e.value):
            log.warning("%s%s=%r is not a number (Double.parseDouble): the broker ignores this line", where, e.key,
                        e.value)


def _int_setting(name: str, raw: str, java_type: str, default: object, line: int | None) -> int:
    """A whole-number setting as ``Integer.parseInt``/``Long.parseLong`` reads it, or an error saying
    why the broker would have ignored the line."""
    bits = 64 if java_type == "long" else 32
    value = _java_integer(raw, bits)
    if value is not None:
        return value
    limit = JAVA_LONG_MAX if bits == 64 else JAVA_INT_MAX
    stripped = _java_integer(raw.strip(" \t\f"), bits)
    if stripped is not None:
        why = "blanks around the number make Integer.parseInt fail"
        fix = f"remove them ({name}={stripped}), or delete the line if the store was written with the default"
    elif _java_integer(raw.strip(" \t\f"), 128) is not None:
        why = f"it is beyond a Java {java_type} (at most {limit})"
        fix = f"use a whole number up to {limit}"
    else:
        why = "it is not a whole number"
        fix = f"use digits only, e.g. {name}={default}"
    raise UnsupportedConfigError(
        f"{_where(line)}{name}={raw!r} is not a setting the broker can read ({why}): the broker would ignore "
        f"the line and run with {default}; {fix}")


def _index_size_error(slots: int, entries: int) -> str | None:
    """Why an IndexFile of these dimensions cannot exist, or None.  ``IndexFile``'s constructor
    computes ``40 + hashSlotNum * 4 + indexNum * 20`` in Java int arithmetic and maps the file as one
    ``MappedByteBuffer`` (``MappedFile.init``), so the size must fit a Java int."""
    size = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * slots + INDEX_ENTRY_SIZE * entries
    if size <= JAVA_INT_MAX:
        return None
    max_entries = (JAVA_INT_MAX - INDEX_HEADER_SIZE - INDEX_SLOT_SIZE * slots) // INDEX_ENTRY_SIZE
    max_slots = (JAVA_INT_MAX - INDEX_HEADER_SIZE - INDEX_ENTRY_SIZE * entries) // INDEX_SLOT_SIZE
    options = []
    if max_entries >= 2:
        options.append(f"maxIndexNum up to {max_entries:,} with this maxHashSlotNum")
    if max_slots >= 1:
        options.append(f"maxHashSlotNum up to {max_slots:,} with this maxIndexNum")
    accepted = " or ".join(options) if options else "smaller values of both"
    return (f"maxHashSlotNum={slots} and maxIndexNum={entries} make index files of {size:,} bytes (40 + 4 x "
            f"maxHashSlotNum + 20 x maxIndexNum), more than the {JAVA_INT_MAX:,} a broker can compute and map "
            f"(IndexFile sizes are Java ints): use {accepted} (defaults 5000000 and 20000000)")


def parse_delay_levels(spec: str) -> tuple[int, ...]:
    """Delay of each level in ms, level 1 first [ScheduleMessageService.parseDelayLevel]."""
    levels = []
    for token in spec.split(" "):
        if not token or token[-1] not in _TIME_UNIT_MS:
            raise UnsupportedConfigError(
                f"messageDelayLevel={spec!r}: each level must be a number followed by s, m, h or d "
                "(the broker fails to start on this value too)")
        try:
            levels.append(int(token[:-1]) * _TIME_UNIT_MS[token[-1]])
        except ValueError:
            raise UnsupportedConfigError(f"messageDelayLevel={spec!r}: {token!r} is not a number and a unit") from None
    return tuple(levels)


@dataclasses.dataclass(frozen=True)
class BrokerConfig:
    """The subset of ``MessageStoreConfig``/``BrokerConfig`` that decides the bytes of
    ``consumequeue/`` and ``index/``, and the cleanup settings used by the expiry audit."""

    mappedFileSizeCommitLog: int = 1024 * 1024 * 1024
    mappedFileSizeConsumeQueue: int = 300_000 * CQ_UNIT_SIZE
    maxHashSlotNum: int = 5_000_000
    maxIndexNum: int = 5_000_000 * 4
    messageIndexEnable: bool = True
    messageDelayLevel: str = DEFAULT_DELAY_LEVELS
    enableMultiDispatch: bool = False
    enableLmq: bool = False
    enableConsumeQueueExt: bool = False
    brokerId: int = 0
    enableDLegerCommitLog: bool = False
    duplicationEnable: bool = False
    storeType: str = "default"
    # cleanup (expiry audit) [MessageStoreConfig field defaults, 4.9.8 / 5.3.3 / 5.5.1; the rules that
    # read them are in store_format.expiry]
    fileReservedTime: int = 72
    deleteWhen: str = "04"
    diskMaxUsedSpaceRatio: int = 75
    deleteFileBatchMax: int = 10                 # 5.x only (4.9: MappedFileQueue.DELETE_FILES_BATCH_MAX = 10)
    destroyMapedFileIntervalForcibly: int = 1000 * 120
    cleanFileForciblyEnable: bool = True
    cleanResourceInterval: int = 10_000
    deleteCommitLogFilesInterval: int = 100
    diskSpaceWarningLevelRatio: int = 90         # 5.x only (4.9: system property, default 0.90)
    diskSpaceCleanForciblyRatio: int = 85        # 5.x only (4.9: system property, default 0.85)
    # read by a restart's commitlog recovery and DefaultMessageStore.start (--as-restart, verify);
    # every setting those read is listed in docs/restart-settings.md [MessageStoreConfig, BrokerConfig]
    checkCRCOnRecover: bool = True
    messageIndexSafe: bool = False
    forceVerifyPropCRC: bool = False
    recheckReputOffsetFromCq: bool = False
    enableControllerMode: bool = False
    enableBuildConsumeQueueConcurrently: bool = False
    # 5.5.1: CommitLogDispatcherBuildIndex writes index files only with indexFileWriteEnable; the
    # recovery walks back at most commitLogRecoverMaxNum segments (<= 0: 10)
    indexFileWriteEnable: bool = True
    commitLogRecoverMaxNum: int = 10
    enableAcceleratedRecovery: bool = False
    checkCommitLogOffsetOnRecover: bool = False
    # which broker line's reput to mirror where lines differ: "4" (4.9.x), "5" (5.0-5.3), "5.5" (5.5.x:
    # 5.x plus tag keys in the index, see docs/restart-settings.md), or "auto" (decided from the
    # records: see store_format.reput.detect_broker_version; it cannot tell 5.5 from 5.3)
    brokerVersion: str = "auto"

    def __post_init__(self) -> None:
        if self.enableConsumeQueueExt:
            raise UnsupportedConfigError(
                "enableConsumeQueueExt=true is not supported: with it the broker stores ConsumeQueueExt "
                "addresses instead of tag hash codes. Rebuild with the broker instead, or disable it.")
        range_error = _range_error({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})
        if range_error:
            raise UnsupportedConfigError(range_error[1])
        if self.brokerVersion not in BROKER_LINES:
            raise UnsupportedConfigError(f"brokerVersion={self.brokerVersion!r}: use 4 (4.9.x), 5 (5.0-5.3), 5.5 "
                                         "(5.5.x) or auto")
        if self.brokerVersion == "5.5" and not self.indexFileWriteEnable:
            # 5.5.1 CommitLogDispatcherBuildIndex: no IndexService.buildIndex, no index files
            object.__setattr__(self, "messageIndexEnable", False)
        if self.enableDLegerCommitLog:
            raise UnsupportedConfigError(
                "enableDLegerCommitLog=true: a DLedger commitlog wraps records in DLedger entries; this project "
                "reads plain commitlogs only")
        if self.duplicationEnable:
            raise UnsupportedConfigError(
                "duplicationEnable=true: the broker's reput then stops at a confirm offset this project cannot "
                "know; rebuild with the broker, or disable it")
        if self.storeType != "default":
            raise UnsupportedConfigError(
                f"storeType={self.storeType}: only the file-based consume queue store (storeType=default) is "
                "rebuilt; RocksDB consume queues are not files")
        parse_delay_levels(self.messageDelayLevel)

    @property
    def cq_file_size(self) -> int:
        """Consume queue file size rounded up to whole units [MessageStoreConfig.getMappedFileSizeConsumeQueue]."""
        units = -(-self.mappedFileSizeConsumeQueue // CQ_UNIT_SIZE)
        return units * CQ_UNIT_SIZE

    @property
    def index_entries_per_file(self) -> int:
        """Entries an index file holds: numbers 1 .. maxIndexNum - 1 [IndexFile.isWriteFull]."""
        return self.maxIndexNum - 1

    @property
    def delay_levels_ms(self) -> tuple[int, ...]:
        return parse_delay_levels(self.messageDelayLevel)

    @property
    def empty_index_count(self) -> int:
        """indexCount on disk of an index file nothing was put into (see
        :func:`store_format.indexfile.build_index_array`)."""
        return 1 if self.is_5x else 0

    @property
    def is_master(self) -> bool:
        """``brokerId == MixAll.MASTER_ID``: a master's reput skips past unreadable records."""
        return self.brokerId == 0

    @property
    def is_5x(self) -> bool:
        return self.brokerVersion in ("5", "5.5")

    @property
    def indexes_tags(self) -> bool:
        """5.5.1 ``IndexService.buildIndex`` also puts ``topic#T#tags`` for a record with tags."""
        return self.brokerVersion == "5.5"

    @property
    def accepts_v2_records(self) -> bool:
        """Whether records with the V2 magic code (5.x, long topics) are readable: not for a broker
        known to be 4.9.x, whose ``checkMessageAndReturnSize`` knows the V1 code only.  A store whose
        line was not given and looked like 4.9.x ("auto") still reads them: nothing says the broker
        could not."""
        return self.brokerVersion != "4"

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, _lines: Mapping[str, int] | None = None,
                        **overrides: object) -> BrokerConfig:
        """Build from broker.conf entries as ``MixAll.properties2Object`` reads them; keys that are no
        field are ignored (:func:`load_broker_config` warns about them).

        Raises:
            UnsupportedConfigError: a whole number the broker cannot parse (it would ignore the line
                and run with its default, not with what the file says), or a value a broker cannot
                work with; the message names the line when ``_lines`` gives it.
        """
        lines = _lines or {}
        kwargs: dict[str, object] = {}
        for field in dataclasses.fields(cls):
            if field.name not in props:
                continue
            raw = props[field.name]
            line = lines.get(field.name)
            if field.type in ("int", int):
                kwargs[field.name] = _int_setting(field.name, raw, _SETTING_TYPES.get(field.name, "int"),
                                                  field.default, line)
            elif field.type in ("bool", bool):
                if raw.lower() not in ("true", "false"):
                    log.warning("%s%s=%r is read as false by the broker (Boolean.parseBoolean takes only true, "
                                "in any case, and no blanks); write true or false", _where(line), field.name, raw)
                kwargs[field.name] = _java_boolean(raw)
            else:
                kwargs[field.name] = raw.strip()
        kwargs.update(overrides)
        values = {f.name: kwargs.get(f.name, f.default) for f in dataclasses.fields(cls)}
        error = _range_error(values)
        if error:
            raise UnsupportedConfigError(f"{_where(lines.get(error[0]))}{error[1]}")
        return cls(**kwargs)  # type: ignore[arg-type]

    def as_properties(self) -> dict[str, str]:
        return {f.name: str(getattr(self, f.name)).lower() if isinstance(getattr(self, f.name), bool)
                else str(getattr(self, f.name)) for f in dataclasses.fields(self)}


_JAVA_INT_FIELDS = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum",
                    "fileReservedTime", "diskMaxUsedSpaceRatio", "deleteFileBatchMax",
                    "destroyMapedFileIntervalForcibly", "cleanResourceInterval", "deleteCommitLogFilesInterval",
                    "diskSpaceWarningLevelRatio", "diskSpaceCleanForciblyRatio")
_POSITIVE_FIELDS = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum")
# MessageStoreConfig.getMappedFileSizeConsumeQueue rounds up to whole units in int arithmetic
_MAX_CQ_SETTING = JAVA_INT_MAX // CQ_UNIT_SIZE * CQ_UNIT_SIZE


def _range_error(values: Mapping[str, object]) -> tuple[str, str] | None:
    """(setting, message) for the first value a broker cannot work with, or None."""
    for name in _JAVA_INT_FIELDS:
        v = values[name]
        if isinstance(v, int) and not -JAVA_INT_MAX - 1 <= v <= JAVA_INT_MAX:
            return name, (f"{name}={v} is beyond a Java int (the broker reads it with Integer.parseInt and would "
                          f"ignore it): use a whole number up to {JAVA_INT_MAX}")
    broker_id = values["brokerId"]
    if isinstance(broker_id, int) and not -JAVA_LONG_MAX - 1 <= broker_id <= JAVA_LONG_MAX:
        return "brokerId", f"brokerId={broker_id} is beyond a Java long: use 0 for a master, 1 or more for a slave"
    defaults = {f.name: f.default for f in dataclasses.fields(BrokerConfig)}
    for name in _POSITIVE_FIELDS:
        v = values[name]
        if isinstance(v, int) and v <= 0:
            return name, f"{name}={v} must be a positive number (the broker's default is {defaults[name]})"
    max_index = values["maxIndexNum"]
    slots = values["maxHashSlotNum"]
    assert isinstance(max_index, int) and isinstance(slots, int)
    if max_index < 2:
        return "maxIndexNum", ("maxIndexNum must be at least 2 (an index file holds maxIndexNum - 1 entries; "
                               "the broker's default is 20000000)")
    cq = values["mappedFileSizeConsumeQueue"]
    if isinstance(cq, int) and cq > _MAX_CQ_SETTING:
        return "mappedFileSizeConsumeQueue", (
            f"mappedFileSizeConsumeQueue={cq}: rounded up to whole 20-byte units it no longer fits the Java int "
            f"of MessageStoreConfig.getMappedFileSizeConsumeQueue; use at most {_MAX_CQ_SETTING} (default "
            f"{defaults['mappedFileSizeConsumeQueue']})")
    index_error = _index_size_error(slots, max_index)
    if index_error:
        bigger = "maxHashSlotNum" if INDEX_SLOT_SIZE * slots >= INDEX_ENTRY_SIZE * max_index else "maxIndexNum"
        return bigger, index_error
    return None


def load_broker_config(text: str | None, **overrides: object) -> BrokerConfig:
    """Parse broker.conf text (None: all defaults), checking every line first.

    Raises:
        UnsupportedConfigError: a line that is no property, a value the broker would not take for a
            setting this project reproduces, or settings it cannot reproduce; the message names the
            line and what would be accepted.
    """
    if not text:
        return BrokerConfig.from_properties({}, **overrides)  # type: ignore[arg-type]
    entries = read_properties(text)
    _check_entries(entries)
    props = {e.key: e.value for e in entries}
    lines = {e.key: e.line for e in entries}
    return BrokerConfig.from_properties(props, _lines=lines, **overrides)
