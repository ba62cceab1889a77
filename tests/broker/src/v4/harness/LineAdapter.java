package harness;

import java.io.File;
import java.io.IOException;
import java.util.Collection;
import java.util.Map;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.TopicFilterType;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.MessageExtBrokerInner;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/** What differs on the 4.9.x line: the store's constructor, where MessageExtBrokerInner lives, and
 *  the store itself moving delayed messages to SCHEDULE_TOPIC_XXXX (CommitLog.putMessage). */
public final class LineAdapter {
    public static final String LINE = "4";

    private LineAdapter() {
    }

    public static DefaultMessageStore newStore(MessageStoreConfig config, BrokerConfig brokerConfig,
        Collection<String> topics) throws IOException {
        return new DefaultMessageStore(config, new BrokerStatsManager(brokerConfig.getBrokerClusterName(), false),
            (topic, queueId, logicOffset, tagsCode, msgStoreTime, filterBitMap, properties) -> { }, brokerConfig) {
            @Override
            public void truncateDirtyLogicFiles(long phyOffset) {
                TruncateCalls.record(this, phyOffset);
                super.truncateDirtyLogicFiles(phyOffset);
            }
        };
    }

    /** The schedule service would deliver due delayed messages, appending to the commitlog. */
    /** 4.9.8 has no concurrent reput: nothing to quiet. */
    static void quietStoreLog() {
    }

    public static void afterStart(DefaultMessageStore store) {
        if (store.getScheduleMessageService() != null) {
            store.getScheduleMessageService().shutdown();
        }
    }

    /** 4.x has no topic attributes and no BatchConsumeQueue. */
    public static void writeTopicsJson(File root, Collection<String> topics, Collection<String> batchTopics) {
        throw new UnsupportedOperationException("BatchCQ topics (queue.type attribute) need a 5.x store");
    }

    public static PutMessageResult putInnerBatch(DefaultMessageStore store, MessageExtBatch batch,
        String clusterName) {
        throw new UnsupportedOperationException("inner-batch messages need a 5.x store");
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

    /** 4.x: CommitLog.putMessage itself rewrites a delayed message's topic and queue. */
    public static void beforePut(DefaultMessageStore store, MessageExt msg) {
    }

    public static PutMessageResult put(DefaultMessageStore store, MessageExt msg) {
        return store.putMessage((MessageExtBrokerInner) msg);
    }

    public static long maxOffsetInQueue(DefaultMessageStore store, String topic, int queueId) {
        return store.getMaxOffsetInQueue(topic, queueId);
    }

    /** 4.x has no RocksDB consume queue. */
    public static com.google.gson.JsonObject[] rocksDbFamilies(DefaultMessageStore store) {
        return new com.google.gson.JsonObject[0];
    }

    public static com.google.gson.JsonObject rocksDbCleanExpired(DefaultMessageStore store, long minOffset) {
        return null;
    }

    public static Map<String, Collection<Integer>> rocksDbQueues(com.google.gson.JsonObject offsetFamily) {
        return new java.util.TreeMap<>();
    }

    public static Map<String, Collection<Integer>> queues(DefaultMessageStore store) {
        Map<String, Collection<Integer>> out = new java.util.TreeMap<>();
        store.getConsumeQueueTable().forEach((t, m) -> out.put(t, new java.util.TreeSet<>(m.keySet())));
        return out;
    }

    /** CommitLog.deleteExpiredFile as CleanCommitLogService calls it on 4.9.x (at most 10 a call). */
    public static int deleteExpiredCommitLog(DefaultMessageStore store, long expiredTime, int interval,
        long forcibly, boolean cleanImmediately) {
        return store.getCommitLog().deleteExpiredFile(expiredTime, interval, forcibly, cleanImmediately);
    }

    /** 4.9.8 has no CRC32 property ({@code enabledAppendPropCRC} is a 5.x setting). */
    public static void refreshPropCrc(java.nio.ByteBuffer record) {
        throw new UnsupportedOperationException("refreshPropCrc: 4.9.8 writes no CRC32 property");
    }

    /** 5.5.1 only: the RocksDB message index. */
    public static int rocksdbIndexLag(java.io.File root, long last, long hole) {
        throw new UnsupportedOperationException("rocksdbIndexLag: no RocksDB message index before 5.5");
    }

    public static long rocksdbCqCheckpoint(java.io.File root, long offset) {
        throw new UnsupportedOperationException("rocksdbCqCheckpoint: no RocksDB consume queue before 5.x");
    }
}
