package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import io.openmessaging.storage.dledger.utils.DLedgerUtils;
import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Calendar;
import java.util.TimeZone;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.dledger.DLedgerCommitLog;

/**
 * What a DLedger store's cleanup deletes at a given clock (the file times shifted as in
 * {@link Cleanup}; a {@code mtimes} key with a slash is a path under the store root, e.g.
 * {@code dledger-n0/data/00000000000000000000}).
 *
 * <p>Request fields besides Cleanup's: {@code brokerRounds} (how many of the broker's rounds call
 * {@code DLedgerCommitLog.deleteExpiredFile}, default 1: they delete old commitlog files, or hand
 * DLedger the broker's settings once none is left), {@code passes} (how many times DLedger's own
 * {@code CleanSpaceService.doWork} runs, default 1), {@code timeZone} (the JVM's default zone,
 * which {@code DLedgerUtils.isItTimeToDo} reads). Then the broker's {@code CleanConsumeQueueService}
 * removes consume queue and index files below the commitlog's new min offset. The answer names the
 * files left, the min offset, the hour {@code doWork} saw (before and after) and the disk ratio
 * {@code DLedgerUtils} measured, and DLedger's settings as the rounds left them.
 */
final class DLedgerCleanup {
    private DLedgerCleanup() {
    }

    static JsonObject run(DefaultMessageStore store, File root, JsonObject req) throws Exception {
        DLedgerCommitLog log = DLedger.commitLog(store);
        MessageStoreConfig c = store.getMessageStoreConfig();
        if (req.has("timeZone")) {
            TimeZone.setDefault(TimeZone.getTimeZone(req.get("timeZone").getAsString()));
        }
        long expired = 60L * 60 * 1000 * c.getFileReservedTime();
        boolean now = req.has("cleanImmediately") && req.get("cleanImmediately").getAsBoolean();
        JsonArray legacy = new JsonArray();
        int rounds = req.has("brokerRounds") ? req.get("brokerRounds").getAsInt() : 1;
        for (int i = 0; i < rounds; i++) {
            legacy.add(LineAdapter.deleteExpiredCommitLog(store, expired, 0, c.getDestroyMapedFileIntervalForcibly(),
                now));
        }
        DLedgerConfig dc = log.getdLedgerServer().getdLedgerConfig();
        JsonObject out = new JsonObject();
        out.addProperty("kind", "cleanup");
        out.add("brokerRoundResults", legacy);
        out.addProperty("fileReservedHours", dc.getFileReservedHours());
        out.addProperty("enableDiskForceClean", dc.isEnableDiskForceClean());
        out.addProperty("deleteWhen", dc.getDeleteWhen());
        out.addProperty("checkExpiredRatio", dc.getDiskSpaceRatioToCheckExpired());
        out.addProperty("forceCleanRatio", dc.getDiskSpaceRatioToForceClean());
        DLedgerMmapFileStore files = (DLedgerMmapFileStore) log.getdLedgerServer().getdLedgerStore();
        Object service = Stores.field(files, DLedgerMmapFileStore.class, "cleanSpaceService");
        Method doWork = service.getClass().getMethod("doWork");
        doWork.setAccessible(true);
        int passes = req.has("passes") ? req.get("passes").getAsInt() : 1;
        out.addProperty("diskRatioBefore", DLedgerUtils.getDiskPartitionSpaceUsedPercent(dc.getStoreBaseDir()));
        out.addProperty("hourBefore", Calendar.getInstance().get(Calendar.HOUR_OF_DAY));
        out.addProperty("clockBefore", System.currentTimeMillis());
        for (int i = 0; i < passes; i++) {
            doWork.invoke(service);
        }
        out.addProperty("hourAfter", Calendar.getInstance().get(Calendar.HOUR_OF_DAY));
        out.addProperty("diskRatioAfter", DLedgerUtils.getDiskPartitionSpaceUsedPercent(dc.getStoreBaseDir()));
        long minOffset = store.getCommitLog().getMinOffset();
        cleanConsumeQueues(store);
        out.addProperty("minOffset", minOffset);
        out.add("commitlog", Cleanup.names(new File(root, "commitlog")));
        out.add("data", Cleanup.names(new File(dc.getDataStorePath())));
        out.add("index", Cleanup.names(new File(root, "index")));
        out.add("consumequeue", consumeQueueFiles(new File(root, "consumequeue")));
        return out;
    }

    /** The broker's CleanConsumeQueueService.deleteExpiredFiles (DefaultMessageStore's on 4.9.8 and
     *  5.3.3, ConsumeQueueStore's on 5.5.1): consume queue files, then index files, below the min offset. */
    static void cleanConsumeQueues(DefaultMessageStore store) throws ReflectiveOperationException {
        Object owner = store;
        Field f = declared(DefaultMessageStore.class, "cleanConsumeQueueService");
        if (f == null) {
            owner = DefaultMessageStore.class.getMethod("getQueueStore").invoke(store);
            f = declared(owner.getClass(), "cleanConsumeQueueService");
        }
        if (f == null) {
            throw new IllegalStateException("no cleanConsumeQueueService on this line");
        }
        Object service = f.get(owner);
        for (Class<?> k = service.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Method m = k.getDeclaredMethod("deleteExpiredFiles");
                m.setAccessible(true);
                m.invoke(service);
                return;
            } catch (NoSuchMethodException e) {
                // up the hierarchy
            }
        }
        throw new IllegalStateException("no deleteExpiredFiles on " + service.getClass());
    }

    static Field declared(Class<?> cls, String name) {
        for (Class<?> k = cls; k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // up the hierarchy
            }
        }
        return null;
    }

    /** {@code topic/queueId/file} of every consume queue file left. */
    static JsonArray consumeQueueFiles(File dir) {
        JsonArray a = new JsonArray();
        String[] topics = dir.list();
        if (topics == null) {
            return a;
        }
        Arrays.sort(topics);
        for (String t : topics) {
            String[] queues = new File(dir, t).list();
            if (queues == null) {
                continue;
            }
            Arrays.sort(queues);
            for (String q : queues) {
                String[] names = new File(new File(dir, t), q).list();
                if (names == null) {
                    continue;
                }
                Arrays.sort(names);
                for (String n : names) {
                    a.add(t + "/" + q + "/" + n);
                }
            }
        }
        return a;
    }
}
