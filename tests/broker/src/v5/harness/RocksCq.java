package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.queue.RocksDBConsumeQueueStore;
import org.apache.rocketmq.store.rocksdb.ConsumeQueueRocksDBStorage;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

/** The RocksDB consume queue (storeType=defaultRocksDB) as the broker opened it: every key/value of
 *  its two column families (ConsumeQueueRocksDBStorage: the default one with the units, "offset"
 *  with the max/min offsets and the dispatch checkpoint), read through the store's own handles. */
final class RocksCq {
    private RocksCq() {
    }

    static ConsumeQueueRocksDBStorage storage(DefaultMessageStore store) throws ReflectiveOperationException {
        Object queues = store.getQueueStore();
        if (!(queues instanceof RocksDBConsumeQueueStore)) {
            return null;
        }
        return (ConsumeQueueRocksDBStorage) Stores.field(queues, RocksDBConsumeQueueStore.class, "rocksDBStorage");
    }

    /** One JSON object per family: {kind: rocksdb, family, entries: [[key hex, value hex], ...]}. */
    static JsonObject[] dump(DefaultMessageStore store) throws ReflectiveOperationException {
        ConsumeQueueRocksDBStorage s = storage(store);
        if (s == null) {
            return new JsonObject[0];
        }
        RocksDB db = (RocksDB) Stores.field(s, s.getClass().getSuperclass(), "db");
        return new JsonObject[] {family(db, s.getDefaultCFHandle(), "default"),
            family(db, s.getOffsetCFHandle(), "offset")};
    }

    static JsonObject family(RocksDB db, ColumnFamilyHandle h, String name) {
        JsonArray entries = new JsonArray();
        try (RocksIterator it = db.newIterator(h)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                JsonArray kv = new JsonArray();
                kv.add(hex(it.key()));
                kv.add(hex(it.value()));
                entries.add(kv);
            }
        }
        JsonObject o = new JsonObject();
        o.addProperty("kind", "rocksdb");
        o.addProperty("family", name);
        o.add("entries", entries);
        return o;
    }

    /** Topic -> queue ids of the "max" keys of the offset family (RocksDBConsumeQueueOffsetTable's
     *  key: topic length, 0x01, topic, 0x01, "max", 0x01, queue id); the store's own queue table is
     *  filled lazily, so it lists nothing after a load. */
    static Map<String, Collection<Integer>> queues(JsonObject offsetFamily) {
        Map<String, Collection<Integer>> out = new TreeMap<>();
        for (com.google.gson.JsonElement e : offsetFamily.getAsJsonArray("entries")) {
            ByteBuffer k = ByteBuffer.wrap(unhex(e.getAsJsonArray().get(0).getAsString()));
            int len = k.getInt(0);
            if (k.capacity() != 4 + 1 + len + 1 + 3 + 1 + 4) {
                continue;
            }
            String topic = new String(k.array(), 5, len, StandardCharsets.UTF_8);
            String kind = new String(k.array(), 5 + len + 1, 3, StandardCharsets.US_ASCII);
            if (!kind.equals("max") || topic.equals("CHECKPOINT_TOPIC")) {
                continue;
            }
            out.computeIfAbsent(topic, t -> new TreeSet<>()).add(k.getInt(k.capacity() - 4));
        }
        return out;
    }

    /** RocksDBConsumeQueueStore.cleanExpired(minOffset), as RocksDBCleanConsumeQueueService calls it, and
     *  the wait for the compaction it hands to AbstractRocksDBStorage's one-thread pool; then both
     *  families as the compaction left them and getMinOffsetInQueue of every queue the offset family
     *  lists (asked after the dump: it writes "min" entries). Null on a store without the database. */
    static JsonObject cleanExpired(DefaultMessageStore store, long minOffset) throws Exception {
        ConsumeQueueRocksDBStorage s = storage(store);
        if (s == null) {
            return null;
        }
        java.util.concurrent.ThreadPoolExecutor pool = (java.util.concurrent.ThreadPoolExecutor)
            Stores.field(s, s.getClass().getSuperclass(), "manualCompactionThread");
        long done = pool.getCompletedTaskCount();
        ((RocksDBConsumeQueueStore) store.getQueueStore()).cleanExpired(minOffset);
        long until = System.currentTimeMillis() + 30_000;
        while (pool.getCompletedTaskCount() <= done && System.currentTimeMillis() < until) {
            Thread.sleep(20);
        }
        JsonObject out = new JsonObject();
        out.addProperty("compacted", pool.getCompletedTaskCount() > done);
        JsonArray families = new JsonArray();
        JsonObject offsets = null;
        for (JsonObject f : dump(store)) {
            families.add(f);
            if ("offset".equals(f.get("family").getAsString())) {
                offsets = f;
            }
        }
        out.add("families", families);
        JsonObject mins = new JsonObject();
        for (Map.Entry<String, Collection<Integer>> e : queues(offsets).entrySet()) {
            for (int qid : e.getValue()) {
                mins.addProperty(e.getKey() + "/" + qid, store.getMinOffsetInQueue(e.getKey(), qid));
            }
        }
        out.add("minOffsetInQueue", mins);
        return out;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xF, 16)).append(Character.forDigit(x & 0xF, 16));
        }
        return sb.toString();
    }

    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
