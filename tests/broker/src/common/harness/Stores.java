package harness;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.Collection;
import java.util.Map;
import java.util.Properties;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/** Opening a store the way the broker does: broker.conf settings bound with MixAll.properties2Object
 *  onto MessageStoreConfig and BrokerConfig (BrokerStartup), then the harness's own paths. */
final class Stores {
    private Stores() {
    }

    static Properties properties(JsonObject config) {
        Properties p = new Properties();
        if (config != null) {
            for (Map.Entry<String, JsonElement> e : config.entrySet()) {
                p.setProperty(e.getKey(), e.getValue().getAsString());
            }
        }
        return p;
    }

    static MessageStoreConfig storeConfig(Properties props, File root, BrokerRole role) {
        MessageStoreConfig c = new MessageStoreConfig();
        MixAll.properties2Object(props, c);
        c.setStorePathRootDir(root.getAbsolutePath());
        c.setStorePathCommitLog(new File(root, "commitlog").getAbsolutePath());
        c.setHaListenPort(0);  // an ephemeral port: no clash with a broker or another harness run
        if (role != null) {
            c.setBrokerRole(role);
        }
        return c;
    }

    static BrokerConfig brokerConfig(Properties props) {
        BrokerConfig b = new BrokerConfig();
        MixAll.properties2Object(props, b);
        return b;
    }

    /** One store constructed at a time: StoreStatsService's constructor (every line) fills a static
     *  TreeMap, and two stores constructed in threads of one JVM corrupt it (a NullPointerException in
     *  TreeMap.put, seen in the suite). */
    private static final Object CONSTRUCTION = new Object();

    static DefaultMessageStore open(Properties props, File root, BrokerRole role, Collection<String> topics)
        throws IOException {
        synchronized (CONSTRUCTION) {
            return LineAdapter.newStore(storeConfig(props, root, role), brokerConfig(props), topics);
        }
    }

    /** How long before the end of the shutdown's pause the harness no longer cuts it short. */
    private static final long PAUSE_MARGIN_MS = 300;

    /**
     * {@code store.shutdown()} without its fixed pause: {@code DefaultMessageStore.shutdown} stops its
     * scheduled executors, then sleeps (1 s on 4.9.8, 3 s on 5.x) before it shuts the services down, and a
     * scenario with a write and a restart pays it twice. A watcher thread waits for that sleep, then for
     * the store's executors to end (what the pause gives them time for), and interrupts the sleep, which the
     * store catches and goes on; it never interrupts anything else (it checks the stack right before, and
     * not near the pause's end). What the store writes at shutdown does not depend on the pause once its
     * dispatch has settled, which the callers wait for ({@link #awaitDispatched}, {@code ReputOnly.awaitQuiet}):
     * not so for {@code enableBuildConsumeQueueConcurrently=true} after {@code awaitDispatched} alone, whose
     * {@code reputFromOffset} runs ahead of the batch tasks and whose {@code DispatchService} leaves its loop at
     * shutdown without taking the batches still put: the write phase's queues and index, which that may leave
     * short, are deleted before the reput that is looked at, which {@code ReputOnly.awaitQuiet} waits for.
     */
    static void shutdown(DefaultMessageStore store) {
        Thread self = Thread.currentThread();
        long pauseMs = LineAdapter.LINE.equals("5") ? 3_000 : 1_000;
        boolean[] done = new boolean[1];
        Thread watcher = new Thread(() -> cutPause(store, self, pauseMs, done), "harness-shutdown-pause");
        watcher.setDaemon(true);
        watcher.start();
        try {
            store.shutdown();
        } finally {
            synchronized (done) {
                done[0] = true;
            }
            try {
                watcher.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            Thread.interrupted();  // the store caught the interrupt; never carry one past the shutdown
        }
    }

    private static void cutPause(DefaultMessageStore store, Thread owner, long pauseMs, boolean[] done) {
        try {
            long seen = -1;
            while (true) {
                synchronized (done) {
                    if (done[0]) {
                        return;
                    }
                }
                if (inPause(owner)) {
                    if (seen < 0) {
                        seen = System.currentTimeMillis();
                        awaitExecutors(store, pauseMs - PAUSE_MARGIN_MS);
                    }
                    synchronized (done) {
                        if (!done[0] && inPause(owner) && System.currentTimeMillis() - seen < pauseMs - PAUSE_MARGIN_MS) {
                            owner.interrupt();
                        }
                    }
                    return;
                }
                Thread.sleep(2);
            }
        } catch (InterruptedException | ReflectiveOperationException e) {
            // no cut: the store sleeps its pause out
        }
    }

    /** The shutdown's own sleep: {@code Thread.sleep} called from {@code DefaultMessageStore.shutdown}. */
    private static boolean inPause(Thread t) {
        StackTraceElement[] st = t.getStackTrace();
        int k = 0;
        boolean sleeping = false;
        while (k < st.length && st[k].getClassName().equals("java.lang.Thread")) {
            sleeping |= st[k].getMethodName().startsWith("sleep");
            k++;
        }
        return sleeping && k < st.length && st[k].getClassName().equals(DefaultMessageStore.class.getName())
            && st[k].getMethodName().equals("shutdown");
    }

    /** Waits for the store's executors the shutdown has stopped to end their running tasks. */
    private static void awaitExecutors(DefaultMessageStore store, long timeoutMs)
        throws InterruptedException, ReflectiveOperationException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        for (Field f : DefaultMessageStore.class.getDeclaredFields()) {
            if (java.util.concurrent.ExecutorService.class.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                java.util.concurrent.ExecutorService e = (java.util.concurrent.ExecutorService) f.get(store);
                if (e != null && e.isShutdown()) {  // those the shutdown stopped before its pause
                    e.awaitTermination(
                        Math.max(0, deadline - System.currentTimeMillis()), java.util.concurrent.TimeUnit.MILLISECONDS);
                }
            }
        }
    }

    /** Lets reads through without start(): no reput, flush, HA or schedule thread runs on the files. */
    static void markReadable(DefaultMessageStore store) throws ReflectiveOperationException {
        Field f = DefaultMessageStore.class.getDeclaredField("shutdown");
        f.setAccessible(true);
        f.setBoolean(store, false);
    }

    static Object field(Object owner, Class<?> cls, String name) throws ReflectiveOperationException {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(owner);
    }

    /** Waits until the reput thread has dispatched everything up to the commitlog's max offset. */
    static void awaitDispatched(DefaultMessageStore store, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (store.dispatchBehindBytes() > 0) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("reput still " + store.dispatchBehindBytes() + " bytes behind");
            }
            Thread.sleep(10);
        }
    }

    /**
     * Waits until the checkpoint's {@code logicsMsgTimestamp} holds the last dispatched record's store timestamp
     * for good, for a scenario whose restart's {@code isMmapFileMatchedRecover} reads it (a pause before the last
     * puts). {@code DefaultMessageStore.FlushConsumeQueueService.doFlush} (4.9.8, 5.3.3; with
     * {@code flushConsumeQueueThoroughInterval=0} every time) reads that value, flushes the queues, then sets what it
     * read: one that read it before the last dispatch and ends after it (a flush thread held up under load) puts an
     * older value back, which no later dispatch corrects, and the walk then starts at another data file than the
     * scenario means. On a DLedger store {@code ConsumeQueue.putMessagePositionInfoWrapper} sets
     * {@code physicMsgTimestamp} to the same value in the same call, and nothing sets it back, so that is the
     * dispatch's value: this waits, on conditions, for a {@code doFlush} that began after the dispatch settled to end
     * (its {@code lastFlushTimestamp}, set as each one begins, seen to move twice) and, if the value was set back,
     * writes the dispatch's value again while the flush thread is idle and waits again (returns how many times).
     * 5.5.1 keeps that service in its {@code ConsumeQueueStore} ({@code getQueueStore()}), whose thorough
     * {@code doFlush} reads {@code tmpLogicsMsgTimestamp} as it begins and sets it as it ends, the same race: waited
     * for there too (a RocksDB consume queue store has no such service: nothing to wait for).
     */
    static int awaitCheckpointTimestamps(DefaultMessageStore store, long timeoutMs)
        throws InterruptedException, ReflectiveOperationException {
        Object service = flushConsumeQueueService(store);
        if (service == null || store.getMessageStoreConfig().getFlushConsumeQueueThoroughInterval() > 0) {
            return 0;   // no flush thread, or one that sets the value once a minute: the scenario cannot mean it
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        org.apache.rocketmq.store.StoreCheckpoint cp = store.getStoreCheckpoint();
        for (int round = 0; ; round++) {
            awaitFlushes(service, 2, deadline);
            if (cp.getLogicsMsgTimestamp() >= cp.getPhysicMsgTimestamp()) {
                return round;
            }
            if (round >= 5) {
                throw new IllegalStateException("the checkpoint's logicsMsgTimestamp stays behind the last dispatch");
            }
            while (!idle(service)) {  // between a doFlush's read and its set the value would be put back again
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the consume queue flush thread never idles");
                }
                Thread.sleep(2);
            }
            cp.setLogicsMsgTimestamp(cp.getPhysicMsgTimestamp());
        }
    }

    /**
     * Waits until every {@code FlushIndexFileThread} has ended: {@code IndexService.getAndCreateLastIndexFile} starts
     * one when an index file fills, which flushes it and only then sets the checkpoint's {@code indexMsgTimestamp}
     * (and flushes the checkpoint). A restart with {@code messageIndexSafe=true} reads that value in
     * {@code isMmapFileMatchedRecover}; a thread held up under load past the shutdown would leave it unset, and the
     * crash recovery's walk would then start at another data file than the scenario means.
     */
    static void awaitIndexFlushThreads(long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("FlushIndexFileThread")) {
                t.join(Math.max(1, deadline - System.currentTimeMillis()));
                if (t.isAlive()) {
                    throw new IllegalStateException("an index file's flush thread does not end");
                }
            }
        }
    }

    /** The store's consume queue flush thread: a field of the store (4.9.8, 5.3.3) or of its queue store (5.5.1);
     *  null where there is none. */
    private static Object flushConsumeQueueService(DefaultMessageStore store) throws ReflectiveOperationException {
        try {
            return field(store, DefaultMessageStore.class, "flushConsumeQueueService");
        } catch (NoSuchFieldException e) {
            Object queues = DefaultMessageStore.class.getMethod("getQueueStore").invoke(store);
            for (Class<?> c = queues.getClass(); c != null; c = c.getSuperclass()) {
                try {
                    return field(queues, c, "flushConsumeQueueService");
                } catch (NoSuchFieldException ignored) {
                    // not declared here: its superclass
                }
            }
            return null;
        }
    }

    /** Waits until {@code service}'s {@code lastFlushTimestamp} has moved {@code times} times. */
    private static void awaitFlushes(Object service, int times, long deadline)
        throws InterruptedException, ReflectiveOperationException {
        Field f = service.getClass().getDeclaredField("lastFlushTimestamp");
        f.setAccessible(true);
        long seen = f.getLong(service);
        for (int moved = 0; moved < times; ) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the consume queue flush thread does not run");
            }
            Thread.sleep(10);
            long now = f.getLong(service);
            if (now != seen) {
                seen = now;
                moved++;
            }
        }
    }

    /** Whether a {@code ServiceThread}'s thread waits in {@code waitForRunning} (between two runs of its loop). */
    private static boolean idle(Object service) throws ReflectiveOperationException {
        Field f = org.apache.rocketmq.common.ServiceThread.class.getDeclaredField("thread");
        f.setAccessible(true);
        Thread t = (Thread) f.get(service);
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getMethodName().equals("waitForRunning")) {
                return true;
            }
        }
        return false;
    }

    static void deleteTree(File f) throws IOException {
        if (!f.exists()) {
            return;
        }
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        if (!f.delete()) {
            throw new IOException("cannot delete " + f);
        }
    }
}
