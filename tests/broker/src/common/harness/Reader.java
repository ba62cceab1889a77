package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.QueryMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;

/**
 * Reads a store with the broker's code and prints what it answers, one JSON object a line.
 *
 * <p>Usage: {@code Reader REQUESTS.json} (one request or an array; each answer line carries the
 * request's index as {@code request}); a request names {@code store} (a root holding
 * {@code commitlog/} and any {@code consumequeue/} and {@code index/}; it is opened in place, so give
 * a copy: the store's recovery may truncate files, and cleanup deletes them), {@code config}
 * (broker.conf settings), {@code queries} ({@code topic}, {@code key}), {@code queues} (true: every
 * message of every queue; on a RocksDB consume queue the queues its offset family lists),
 * {@code rocksdb} (true: every key/value of a RocksDB consume queue, read by RocksCq on 5.x),
 * {@code commitlog} (true: the commitlog's min and max offsets, the latter
 * a DLedger store's committed position) and {@code cleanup} ({@link Cleanup}; {@link DLedgerCleanup} on a DLedger
 * store). The store is loaded (its recovery runs) but not
 * started: no reput, flush, HA or schedule thread touches the files while they are read.
 */
public final class Reader {
    static final int MAX_NUM = 64;  // MessageStoreConfig.maxMsgsNumBatch, the broker's cap per query

    private Reader() {
    }

    public static void main(String[] args) throws Exception {
        JsonElement parsed = JsonParser.parseString(
            new String(Files.readAllBytes(new File(args[0]).toPath()), StandardCharsets.UTF_8));
        JsonArray requests = parsed.isJsonArray() ? parsed.getAsJsonArray() : new JsonArray();
        if (!parsed.isJsonArray()) {
            requests.add(parsed);
        }
        for (int i = 0; i < requests.size(); i++) {
            answer(i, requests.get(i).getAsJsonObject());
        }
        System.out.flush();
        Runtime.getRuntime().halt(0);  // the loaded stores' service threads are not ours to wind down
    }

    static void answer(int request, JsonObject req) throws Exception {
        File root = new File(req.get("store").getAsString());
        Properties props = Stores.properties(req.getAsJsonObject("config"));
        if (req.has("cleanup")) {
            Cleanup.shiftTimes(root, req.getAsJsonObject("cleanup"));
        }
        DefaultMessageStore store = Stores.open(props, root, BrokerRole.SLAVE, new ArrayList<>());
        if (!store.load()) {
            throw new IllegalStateException("store load failed: " + root);
        }
        Stores.markReadable(store);
        List<JsonObject> out = new ArrayList<>();
        // a RocksDB consume queue (storeType=defaultRocksDB): its key/value sets, read before any
        // query, since getMinOffsetInQueue writes "min" keys (RocksDBConsumeQueueOffsetTable)
        Map<String, Collection<Integer>> rocksQueues = null;
        for (JsonObject family : LineAdapter.rocksDbFamilies(store)) {
            if (req.has("rocksdb") && req.get("rocksdb").getAsBoolean()) {
                out.add(family);
            }
            if ("offset".equals(family.get("family").getAsString())) {
                rocksQueues = LineAdapter.rocksDbQueues(family);
            }
        }
        if (req.has("commitlog") && req.get("commitlog").getAsBoolean()) {
            // where the reput's reading ends after this load: a DLedger store's committed position
            JsonObject o = new JsonObject();
            o.addProperty("kind", "commitlog");
            o.addProperty("minPhyOffset", store.getMinPhyOffset());
            o.addProperty("maxPhyOffset", store.getMaxPhyOffset());
            out.add(o);
        }
        if (req.has("queries")) {
            for (JsonElement q : req.getAsJsonArray("queries")) {
                JsonObject o = q.getAsJsonObject();
                out.add(query(store, o.get("topic").getAsString(), o.get("key").getAsString()));
            }
        }
        if (req.has("queues") && req.get("queues").getAsBoolean()) {
            Map<String, Collection<Integer>> queues = rocksQueues != null ? rocksQueues : LineAdapter.queues(store);
            for (Map.Entry<String, Collection<Integer>> e : queues.entrySet()) {
                for (int qid : e.getValue()) {
                    out.add(queue(store, e.getKey(), qid));
                }
            }
        }
        if (req.has("cleanup")) {
            JsonObject cleanup = req.getAsJsonObject("cleanup");
            out.add(DLedger.commitLog(store) != null ? DLedgerCleanup.run(store, root, cleanup)
                : Cleanup.run(store, props, root, cleanup));
        }
        for (JsonObject o : out) {
            o.addProperty("request", request);
            System.out.println(o);
        }
    }

    /**
     * DefaultMessageStore.queryMessage(topic, key, 64, 0, Long.MAX_VALUE) — the offsets the store
     * returns — and the filters the client applies to them in MQAdminImpl.queryMessage: by key (one
     * of the KEYS split at " ", and the same topic; on 5.x any topic for a light message queue) and
     * by unique key (msgId equal; the client then keeps the earliest stored one).
     */
    static JsonObject query(DefaultMessageStore store, String topic, String key) {
        QueryMessageResult r = store.queryMessage(topic, key, MAX_NUM, 0, Long.MAX_VALUE);
        JsonArray offsets = new JsonArray();
        JsonArray byKey = new JsonArray();
        JsonArray byUniq = new JsonArray();
        MessageExt earliest = null;
        boolean lmq = "5".equals(LineAdapter.LINE) && topic.startsWith("%LMQ%");
        for (ByteBuffer b : r.getMessageBufferList()) {
            MessageExt m = MessageDecoder.decode(b, true, false, true);
            offsets.add(m.getCommitLogOffset());
            String keys = m.getKeys();
            if (keys != null && (lmq || topic.equals(m.getTopic()))
                && Arrays.asList(keys.split(MessageConst.KEY_SEPARATOR)).contains(key)) {
                byKey.add(m.getCommitLogOffset());
            }
            if (key.equals(m.getMsgId())) {
                JsonObject u = new JsonObject();
                u.addProperty("offset", m.getCommitLogOffset());
                u.addProperty("topic", m.getTopic());
                byUniq.add(u);
                if (earliest == null || earliest.getStoreTimestamp() > m.getStoreTimestamp()) {
                    earliest = m;
                }
            }
        }
        r.release();
        JsonObject out = new JsonObject();
        out.addProperty("kind", "query");
        out.addProperty("topic", topic);
        out.addProperty("key", key);
        out.add("offsets", offsets);
        out.add("byKey", byKey);
        out.add("byUniqKey", byUniq);
        if (earliest != null) {
            out.addProperty("uniqKeyResult", earliest.getCommitLogOffset());
        }
        return out;
    }

    /** Min and max offset of a queue, and every message getMessage returns, read from offset 0 (from the
     *  queue's minimum when offset 0 is below it). */
    static JsonObject queue(DefaultMessageStore store, String topic, int queueId) throws Exception {
        JsonObject out = new JsonObject();
        out.addProperty("kind", "queue");
        out.addProperty("topic", topic);
        out.addProperty("queueId", queueId);
        long max = LineAdapter.maxOffsetInQueue(store, topic, queueId);
        out.addProperty("min", store.getMinOffsetInQueue(topic, queueId));
        out.addProperty("max", max);
        JsonArray msgs = new JsonArray();
        List<String> statuses = new ArrayList<>();
        long offset = 0;
        for (int guard = 0; guard < 1_000_000; guard++) {
            GetMessageResult r = store.getMessage("harness", topic, queueId, offset, 32, null);
            if (r == null) {
                statuses.add("null");
                break;
            }
            statuses.add(r.getStatus().name());
            for (ByteBuffer b : r.getMessageBufferList()) {
                MessageExt m = MessageDecoder.decode(b, false, false, false);
                JsonArray row = new JsonArray();
                row.add(m.getQueueOffset());
                row.add(m.getCommitLogOffset());
                row.add(m.getStoreSize());
                row.add(m.getTopic());
                msgs.add(row);
            }
            r.release();
            // a queue whose first units are gone (a RocksDB queue without the unit of commitlog offset 0):
            // a slave's getMessage keeps the asked offset, so the read goes on from the queue's minimum
            if ("OFFSET_TOO_SMALL".equals(r.getStatus().name()) && r.getMinOffset() > offset) {
                offset = r.getMinOffset();
                continue;
            }
            if (r.getNextBeginOffset() <= offset) {
                break;
            }
            offset = r.getNextBeginOffset();
        }
        out.add("messages", msgs);
        out.add("statuses", new com.google.gson.Gson().toJsonTree(statuses));
        return out;
    }
}
