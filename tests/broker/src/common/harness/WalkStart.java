package harness;

import com.google.gson.JsonObject;
import java.lang.reflect.Method;
import java.util.List;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.StoreCheckpoint;
import org.apache.rocketmq.store.dledger.DLedgerCommitLog;

/**
 * The data file a 5.3.3 DLedger crash restart walks from ({@code DLedgerCommitLog.dledgerRecoverAbnormally}): the
 * last one whose first message was stored at least 3 s before both of the checkpoint's {@code physicMsgTimestamp}
 * and {@code logicsMsgTimestamp} ({@code isMmapFileMatchedRecover}, {@code StoreCheckpoint.getMinTimestamp}; on a
 * DLedger store both are the last dispatched record's, {@code ConsumeQueue.putMessagePositionInfoWrapper}), else
 * the first. A scenario put without a pause means the first: puts slowed by a loaded machine to 3 s past a later
 * file's start would move the walk there, so {@link #firstFile} lowers both timestamps (in memory, before the
 * shutdown writes them) to the highest value at which the broker's own check answers the first file. On 5.3.3
 * nothing else on the restart reads them: {@code CommitLog.isMmapFileMatchedRecover} runs only for a DLedger store
 * without data files, and {@code FlushConsumeQueueService.doFlush} only writes the value it read back. Should the
 * broker still answer a later file, the writer writes the store again, once, its puts alone in the JVM.
 */
final class WalkStart {
    /** Put phases: each holds the read lock while it puts and waits for the dispatch, a store written again the
     *  write lock, so that no other store's puts in this JVM slow its own. */
    private static final ReadWriteLock PUTS = new ReentrantReadWriteLock(true);
    private static final ThreadLocal<Boolean> ALONE = ThreadLocal.withInitial(() -> false);

    private WalkStart() {
    }

    /** A crash scenario without a pause whose walk would start at a later data file ({@link #startFile}). */
    static final class Moved extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        Moved(int start) {
            super("the crash restart's walk would start at data file " + start + ", not the first the scenario "
                + "means: the puts from that file's first message on took 3 s or more (a loaded machine)");
        }
    }

    interface Write {
        void run() throws Exception;
    }

    /** Runs {@code w} (a store's write) with its put phases alone in this JVM. */
    static void alone(Write w) throws Exception {
        ALONE.set(true);
        try {
            w.run();
        } finally {
            ALONE.set(false);
        }
    }

    /** The lock a put phase of this thread holds (see {@link #PUTS}). */
    static Lock putsLock() {
        return ALONE.get() ? PUTS.writeLock() : PUTS.readLock();
    }

    /**
     * {@link #startFile}, after lowering the checkpoint's {@code physicMsgTimestamp} and {@code logicsMsgTimestamp}
     * when it is a later file: both set to the highest value below their smaller one at which the broker's check
     * answers the first file (a bisection over {@link #startFile}; about 3 s after the second file's first
     * message's store time), and {@code out} gets {@code checkpointTimestampsSet} ({@code was}, {@code set}, and
     * {@code movedFrom}, the file it answered before). A {@code doFlush} that read {@code logicsMsgTimestamp}
     * before may write the broker's value back; {@code physicMsgTimestamp}, which only a dispatch sets (all done
     * here), keeps their smaller one, the one the check reads.
     */
    static int firstFile(DefaultMessageStore store, JsonObject out) throws ReflectiveOperationException {
        int start = startFile(store);
        if (start <= 0) {
            return start;
        }
        StoreCheckpoint cp = store.getStoreCheckpoint();
        long was = Math.min(cp.getPhysicMsgTimestamp(), cp.getLogicsMsgTimestamp());
        long lo = 0;   // min 0: no file matches (a stored message's timestamp is above 0)
        long hi = was;
        while (hi - lo > 1) {
            long mid = lo + (hi - lo) / 2;
            setBoth(cp, mid);
            if (startFile(store) == 0) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        setBoth(cp, lo);
        JsonObject set = new JsonObject();
        set.addProperty("was", was);
        set.addProperty("set", lo);
        set.addProperty("movedFrom", start);
        out.add("checkpointTimestampsSet", set);
        return startFile(store);   // asked again with the values the shutdown writes
    }

    private static void setBoth(StoreCheckpoint cp, long timestamp) {
        cp.setPhysicMsgTimestamp(timestamp);
        cp.setLogicsMsgTimestamp(timestamp);
    }

    /**
     * The data file a crash restart's {@code dledgerRecoverAbnormally} would walk from with the checkpoint as it
     * stands: the broker's own {@code DLedgerCommitLog.isMmapFileMatchedRecover(MmapFile)} asked of each data file
     * from the last one back, the first that matches, else the first file. Only 5.3.3 has that one-argument check,
     * whose answer (no RocksDB consume queue) reads nothing but the checkpoint's timestamps, which the shutdown
     * writes as they stand (a flush may set {@code logicsMsgTimestamp} back, never forward: a file found not to
     * match does not match then either); -1 elsewhere (4.9.8 walks nothing, 5.5.1 reads the checkpoint's
     * {@code logicsPhysicalOffset}, which scenarios set after the puts).
     */
    static int startFile(DefaultMessageStore store) throws ReflectiveOperationException {
        DLedgerCommitLog log = DLedger.commitLog(store);
        if (log == null) {
            return -1;
        }
        Method matched = null;
        for (Method m : DLedgerCommitLog.class.getDeclaredMethods()) {
            if (m.getName().equals("isMmapFileMatchedRecover") && m.getParameterCount() == 1) {
                matched = m;
            }
        }
        Object config = store.getMessageStoreConfig();
        if (matched == null || (Boolean) config.getClass().getMethod("isEnableRocksDBStore").invoke(config)) {
            return -1;   // with a RocksDB consume queue it compares the first message's offset with their max
        }
        matched.setAccessible(true);
        Object list = Stores.field(log, DLedgerCommitLog.class, "dLedgerFileList");
        List<?> files = (List<?>) list.getClass().getMethod("getMappedFiles").invoke(list);
        for (int k = files.size() - 1; k > 0; k--) {
            if ((Boolean) matched.invoke(log, files.get(k))) {
                return k;
            }
        }
        return 0;
    }
}
