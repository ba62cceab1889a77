package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.File;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * What the broker's cleanup deletes at a given clock. CleanCommitLogService reads the wall clock
 * (MappedFileQueue.deleteExpiredFileByTime compares System.currentTimeMillis() with each file's
 * modification time plus fileReservedTime), so it cannot be handed a clock; only the difference
 * "now - mtime" matters, so each segment's mtime is set to the given mtime shifted by
 * (now - clock), and CommitLog.deleteExpiredFile is called with the store's settings
 * (fileReservedTime, destroyMapedFileIntervalForcibly, deleteFileBatchMax; no pause between files)
 * and the given cleanImmediately (what deleteWhen / disk usage would decide). Then the index files
 * below the new commitlog min offset go as CleanConsumeQueueService removes them
 * (IndexService.deleteExpiredFile). The time is set before the store loads its files. With
 * "consumeQueues" the broker's own CleanConsumeQueueService round follows (consume queue files, their
 * ext files, index files) and the remaining consumequeue/ and consumequeue_ext/ files are listed.
 */
final class Cleanup {
    private Cleanup() {
    }

    /**
     * Request fields: clockMs, mtimes {segment name, or a path under the root: ms}, cleanImmediately;
     * consumeQueues (true: then the consume queue cleanup, see run), rocksdb.
     */
    static void shiftTimes(File root, JsonObject req) {
        long shift = System.currentTimeMillis() - req.get("clockMs").getAsLong();
        JsonObject mtimes = req.getAsJsonObject("mtimes");
        for (String name : mtimes.keySet()) {
            File f = name.contains("/") ? new File(root, name) : new File(new File(root, "commitlog"), name);
            if (!f.setLastModified(mtimes.get(name).getAsLong() + shift)) {
                throw new IllegalStateException("cannot set the time of " + f);
            }
        }
    }

    static JsonObject run(DefaultMessageStore store, Properties props, File root, JsonObject req)
        throws Exception {
        MessageStoreConfig c = store.getMessageStoreConfig();
        long expired = 60L * 60 * 1000 * c.getFileReservedTime();
        boolean now = req.has("cleanImmediately") && req.get("cleanImmediately").getAsBoolean();
        int deleted = LineAdapter.deleteExpiredCommitLog(store, expired, 0, c.getDestroyMapedFileIntervalForcibly(),
            now);
        long minOffset = store.getCommitLog().getMinOffset();
        Object index = Stores.field(store, DefaultMessageStore.class, "indexService");
        index.getClass().getMethod("deleteExpiredFile", long.class).invoke(index, minOffset);
        JsonObject out = new JsonObject();
        out.addProperty("kind", "cleanup");
        out.addProperty("deletedCommitLogFiles", deleted);
        out.addProperty("minOffset", minOffset);
        // asked for with "consumeQueues": the broker's CleanConsumeQueueService round at the new minimum
        // (ConsumeQueue.deleteExpiredFile per queue: the files below it, then correctMinOffset, which cuts
        // the queue's ext files with ConsumeQueueExt.truncateByMinAddress)
        if (req.has("consumeQueues") && req.get("consumeQueues").getAsBoolean()) {
            cleanConsumeQueues(store);
            out.add("consumequeue", tree(new File(root, "consumequeue")));
            out.add("consumequeue_ext", tree(new File(root, "consumequeue_ext")));
        }
        out.add("commitlog", names(new File(root, "commitlog")));
        out.add("index", names(new File(root, "index")));
        // storeType=defaultRocksDB: RocksDBCleanConsumeQueueService's cleanExpired (a compaction) instead of
        // consume queue files (asked for with "rocksdb": it runs whatever deleteWhen and the disk say)
        if (req.has("rocksdb") && req.get("rocksdb").getAsBoolean()) {
            JsonObject rocks = LineAdapter.rocksDbCleanExpired(store, minOffset);
            if (rocks != null) {
                out.add("rocksdb", rocks);
            }
        }
        return out;
    }

    /**
     * One run of the broker's own CleanConsumeQueueService.deleteExpiredFiles: a field of
     * DefaultMessageStore on 4.9.8 and 5.3.3, of its ConsumeQueueStore on 5.5.1. Called directly (not
     * through run(), which logs and swallows what it throws). Its lastPhysicalMinOffset is 0 in a store
     * just loaded, so it runs whenever the commitlog's minimum is above 0.
     */
    static void cleanConsumeQueues(DefaultMessageStore store) throws ReflectiveOperationException {
        Object service;
        try {
            service = Stores.field(store, DefaultMessageStore.class, "cleanConsumeQueueService");
        } catch (NoSuchFieldException e) {
            Object queues = Stores.field(store, DefaultMessageStore.class, "consumeQueueStore");
            service = Stores.field(queues, queues.getClass(), "cleanConsumeQueueService");
        }
        Method m = service.getClass().getDeclaredMethod("deleteExpiredFiles");
        m.setAccessible(true);
        m.invoke(service);
    }

    /** Every file under dir, as paths relative to it ("topic/queueId/file"), sorted. */
    static JsonArray tree(File dir) {
        List<String> found = new ArrayList<>();
        walk(dir, "", found);
        Collections.sort(found);
        JsonArray a = new JsonArray();
        for (String n : found) {
            a.add(n);
        }
        return a;
    }

    private static void walk(File dir, String prefix, List<String> found) {
        File[] children = dir.listFiles();
        if (children == null) {
            return;
        }
        for (File c : children) {
            if (c.isDirectory()) {
                walk(c, prefix + c.getName() + "/", found);
            } else {
                found.add(prefix + c.getName());
            }
        }
    }

    static JsonArray names(File dir) {
        JsonArray a = new JsonArray();
        String[] names = dir.list();
        if (names != null) {
            Arrays.sort(names);
            for (String n : names) {
                a.add(n);
            }
        }
        return a;
    }
}
