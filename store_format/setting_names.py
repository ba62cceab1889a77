"""Every setting a ``broker.conf`` can hold, with its Java type: the names the checks of
:func:`store_format.config.load_broker_config` know.

``BrokerStartup`` (4.9.8 and 5.3.3) passes the properties to ``MixAll.properties2Object`` for
``BrokerConfig`` (5.3.3: with ``BrokerIdentity``), ``NettyServerConfig``, ``NettyClientConfig``,
``MessageStoreConfig`` and (5.3.3) ``AuthConfig``; the tiered store plugin (5.3.3, tieredstore
``MessageStoreConfig``) registers its own; ``BrokerStartup.properties2SystemEnv`` reads
``rmqAddressServerDomain``/``rmqAddressServerSubGroup``.  A key is the name of a public setter minus
"set" with its first letter lowered, for setters taking int/long/double/float/boolean (or boxed) or
String: the only ones ``properties2Object`` calls.  Listed from the setters of those classes at the
tags rocketmq-all-4.9.8 and rocketmq-all-5.3.3 (union of both), plus the ``MessageStoreConfig``
setters of rocketmq-store 5.5.1; ":int", ":long", ":boolean", ":double" give the parameter's Java
type, no suffix a String.
"""
from __future__ import annotations

import difflib

__all__ = ["STORE_SETTINGS", "KNOWN_SETTINGS", "SETTING_TYPES", "closest_setting"]

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
SETTING_TYPES = {**_setting_types(_OTHER_BROKER_SETTINGS_TEXT), **_STORE_TYPES, **_PROJECT_SETTINGS}
STORE_SETTINGS = frozenset(_STORE_TYPES)
KNOWN_SETTINGS = frozenset(SETTING_TYPES)


def closest_setting(key: str) -> str | None:
    """The store setting (else any broker setting) a misspelt key most likely meant, or None."""
    for pool in (STORE_SETTINGS, KNOWN_SETTINGS):
        match = difflib.get_close_matches(key, pool, n=1, cutoff=0.8)
        if match:
            return match[0]
        lowered = {name.lower(): name for name in pool}
        if key.lower() in lowered:
            return lowered[key.lower()]
    return None
