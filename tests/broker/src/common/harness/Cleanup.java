package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.File;
import java.util.Arrays;
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
 * (IndexService.deleteExpiredFile). The time is set before the store loads its files.
 */
final class Cleanup {
    private Cleanup() {
    }

    /** Request fields: clockMs, mtimes {segment name, or a path under the root: ms}, cleanImmediately. */
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
