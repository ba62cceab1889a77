package harness;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Collection;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicFilterType;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.common.topic.TopicValidator;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageArrivingListener;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.RocksDBMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/** What differs on the 5.x line: the store takes the topic config table, MessageExtBrokerInner
 *  moved to common, and delayed messages are moved to SCHEDULE_TOPIC_XXXX by the broker
 *  (HookUtils.handleScheduleMessage / transformDelayLevelMessage) before the store sees them.
 *  Topics may carry attributes (queue.type=BatchCQ: BatchConsumeQueue, batchconsumequeue/), kept in
 *  {@code <root>/config/topics.json} as the broker's TopicConfigManager keeps them. */
public final class LineAdapter {
    public static final String LINE = "5";

    private LineAdapter() {
    }

    public static DefaultMessageStore newStore(MessageStoreConfig config, BrokerConfig brokerConfig,
        Collection<String> topics) throws IOException {
        ConcurrentMap<String, TopicConfig> table = new ConcurrentHashMap<>();
        for (String t : topics) {
            table.put(t, new TopicConfig(t, 16, 16));
        }
        // the broker's TopicConfigManager loads this file before the store (decode: putAll)
        File topicsJson = topicsJson(new File(config.getStorePathRootDir()));
        if (topicsJson.isFile()) {
            TopicConfigSerializeWrapper w = TopicConfigSerializeWrapper.fromJson(
                new String(Files.readAllBytes(topicsJson.toPath()), StandardCharsets.UTF_8),
                TopicConfigSerializeWrapper.class);
            if (w != null && w.getTopicConfigTable() != null) {
                table.putAll(w.getTopicConfigTable());
            }
        }
        BrokerStatsManager stats = new BrokerStatsManager(brokerConfig.getBrokerClusterName(), false);
        MessageArrivingListener listener =
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { };
        if (config.isEnableRocksDBStore()) {
            // storeType=defaultRocksDB: BrokerController.initializeMessageStore makes this store
            return new RocksDBMessageStore(config, stats, listener, brokerConfig, table);
        }
        return new DefaultMessageStore(config, stats, listener, brokerConfig, table) {
            @Override
            public void truncateDirtyLogicFiles(long phyOffset) throws org.rocksdb.RocksDBException {
                TruncateCalls.record(this, phyOffset);
                super.truncateDirtyLogicFiles(phyOffset);
            }
        };
    }

    public static void afterStart(DefaultMessageStore store) {
    }

    /** The store's log switched off ({@link ReputOnly}: a batch task of the concurrent reput that never ends
     *  logs "[BUG]" on every turn of its loop, to the console the harness reads). */
    static void quietStoreLog() {
        Object log = org.apache.rocketmq.logging.org.slf4j.LoggerFactory.getLogger(
            org.apache.rocketmq.common.constant.LoggerName.STORE_LOGGER_NAME);
        if (log instanceof org.apache.rocketmq.logging.ch.qos.logback.classic.Logger) {
            ((org.apache.rocketmq.logging.ch.qos.logback.classic.Logger) log).setLevel(
                org.apache.rocketmq.logging.ch.qos.logback.classic.Level.OFF);
        }
    }

    /** BrokerPathConfigHelper.getTopicConfigPath: {@code <root>/config/topics.json}. */
    static File topicsJson(File root) {
        return new File(new File(root, "config"), "topics.json");
    }

    /** Writes {@code <root>/config/topics.json} as TopicConfigManager.encode(true) does: every topic
     *  with 16 queues, those of {@code batchTopics} with the attribute queue.type=BatchCQ (the key
     *  as TopicConfig stores it, without the "+" of an update request). */
    public static void writeTopicsJson(File root, Collection<String> topics, Collection<String> batchTopics)
        throws IOException {
        ConcurrentMap<String, TopicConfig> table = new ConcurrentHashMap<>();
        for (String t : topics) {
            TopicConfig c = new TopicConfig(t, 16, 16);
            if (batchTopics.contains(t)) {
                c.setAttributes(Collections.singletonMap("queue.type", "BatchCQ"));
            }
            table.put(t, c);
        }
        TopicConfigSerializeWrapper w = new TopicConfigSerializeWrapper();
        w.setTopicConfigTable(table);
        w.setDataVersion(new DataVersion());
        File f = topicsJson(root);
        if (!f.getParentFile().isDirectory() && !f.getParentFile().mkdirs()) {
            throw new IOException("cannot create " + f.getParentFile());
        }
        Files.write(f.toPath(), w.toJson(true).getBytes(StandardCharsets.UTF_8));
    }

    /** What SendMessageProcessor.sendBatchMessage does with a batch for a BatchCQ topic whose batch
     *  carries a unique id: one inner-batch record (sysFlag NEED_UNWRAP and INNER_BATCH, property
     *  INNER_NUM = the number of encoded messages in the body, CLUSTER), put with putMessage; the
     *  store adds INNER_BASE, the queue offset it assigns. */
    public static PutMessageResult putInnerBatch(DefaultMessageStore store, MessageExtBatch batch,
        String clusterName) {
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_CLUSTER, clusterName);
        batch.setSysFlag(batch.getSysFlag() | MessageSysFlag.NEED_UNWRAP_FLAG | MessageSysFlag.INNER_BATCH_FLAG);
        batch.setInnerBatch(true);
        int innerNum = MessageDecoder.countInnerMsgNum(ByteBuffer.wrap(batch.getBody()));
        MessageAccessor.putProperty(batch, MessageConst.PROPERTY_INNER_NUM, String.valueOf(innerNum));
        batch.setPropertiesString(MessageDecoder.messageProperties2String(batch.getProperties()));
        return store.putMessage(batch);
    }

    public static MessageExt newInner() {
        return new MessageExtBrokerInner();
    }

    public static void setPropertiesString(MessageExt msg, String properties) {
        ((MessageExtBrokerInner) msg).setPropertiesString(properties);
    }

    /** The tags code the broker's send processor gives a message (only the live queue uses it). */
    public static void setTagsCode(MessageExt msg, String tags) {
        ((MessageExtBrokerInner) msg).setTagsCode(
            MessageExtBrokerInner.tagsString2tagsCode(TopicFilterType.SINGLE_TAG, tags));
    }

    /** What the 5.x broker does to a delayed (not prepared/rollback) message before putMessage. */
    public static void beforePut(DefaultMessageStore store, MessageExt msg) {
        int tranType = MessageSysFlag.getTransactionValue(msg.getSysFlag());
        if (msg.getDelayTimeLevel() <= 0 || (tranType != MessageSysFlag.TRANSACTION_NOT_TYPE
            && tranType != MessageSysFlag.TRANSACTION_COMMIT_TYPE)) {
            return;
        }
        if (msg.getDelayTimeLevel() > store.getMaxDelayLevel()) {
            msg.setDelayTimeLevel(store.getMaxDelayLevel());
        }
        MessageAccessor.putProperty(msg, MessageConst.PROPERTY_REAL_TOPIC, msg.getTopic());
        MessageAccessor.putProperty(msg, MessageConst.PROPERTY_REAL_QUEUE_ID, String.valueOf(msg.getQueueId()));
        setPropertiesString(msg, MessageDecoder.messageProperties2String(msg.getProperties()));
        msg.setTopic(TopicValidator.RMQ_SYS_SCHEDULE_TOPIC);
        msg.setQueueId(msg.getDelayTimeLevel() - 1);
    }

    public static PutMessageResult put(DefaultMessageStore store, MessageExt msg) {
        return store.putMessage((MessageExtBrokerInner) msg);
    }

    public static long maxOffsetInQueue(DefaultMessageStore store, String topic, int queueId) throws Exception {
        return store.getMaxOffsetInQueue(topic, queueId);
    }

    /** A RocksDB consume queue's families as the store opened them (none on a file-based store). */
    public static com.google.gson.JsonObject[] rocksDbFamilies(DefaultMessageStore store) throws Exception {
        return RocksCq.dump(store);
    }

    /** The RocksDB consume queue's cleanup after segments went (RocksCq.cleanExpired); null without one. */
    public static com.google.gson.JsonObject rocksDbCleanExpired(DefaultMessageStore store, long minOffset)
        throws Exception {
        return RocksCq.cleanExpired(store, minOffset);
    }

    /** Topic -> queue ids of a RocksDB consume queue, from its offset family's dump. */
    public static Map<String, Collection<Integer>> rocksDbQueues(com.google.gson.JsonObject offsetFamily) {
        return RocksCq.queues(offsetFamily);
    }

    public static Map<String, Collection<Integer>> queues(DefaultMessageStore store) {
        Map<String, Collection<Integer>> out = new java.util.TreeMap<>();
        store.getConsumeQueueTable().forEach((t, m) -> out.put(t, new java.util.TreeSet<>(m.keySet())));
        return out;
    }

    /** CommitLog.deleteExpiredFile as CleanCommitLogService calls it on 5.x (deleteFileBatchMax). */
    public static int deleteExpiredCommitLog(DefaultMessageStore store, long expiredTime, int interval,
        long forcibly, boolean cleanImmediately) {
        return store.getCommitLog().deleteExpiredFile(expiredTime, interval, forcibly, cleanImmediately,
            store.getMessageStoreConfig().getDeleteFileBatchMax());
    }

    /** {@code record} (a whole record from position 0) with its CRC32 property written again over its bytes as
     *  they are now: the broker's own {@code UtilAll.crc32} of all but the last {@code CommitLog.CRC32_RESERVED_LEN}
     *  bytes, put there by {@code MessageDecoder.createCrc32} (what {@code enabledAppendPropCRC} writes). */
    public static void refreshPropCrc(ByteBuffer record) {
        int total = record.getInt(0);
        int at = total - org.apache.rocketmq.store.CommitLog.CRC32_RESERVED_LEN;
        byte[] name = MessageConst.PROPERTY_CRC32.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < name.length; i++) {
            if (record.get(at + i) != name[i]) {
                throw new IllegalArgumentException("refreshPropCrc: the record does not end with its CRC32 property");
            }
        }
        ByteBuffer covered = record.duplicate();
        covered.position(0).limit(at);
        int crc = org.apache.rocketmq.common.UtilAll.crc32(covered);
        ByteBuffer tail = record.duplicate();
        tail.position(at).limit(total);
        MessageDecoder.createCrc32(tail, crc);
    }

    /** The RocksDB message index after a crash that lost its batches after put {@code last} and the one of
     *  {@code hole} (RocksIndexLag); the number of entries deleted. */
    public static int rocksdbIndexLag(File root, long last, long hole) throws Exception {
        return RocksIndexLag.apply(root, last, hole);
    }

    /** The RocksDB consume queue's max-physical-offset checkpoint set to {@code offset} (RocksCqCheckpoint); the
     *  value it had. */
    public static long rocksdbCqCheckpoint(File root, long offset) throws Exception {
        return RocksCqCheckpoint.apply(root, offset);
    }
}
