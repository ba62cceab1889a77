package harness;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.store.CommitLogDispatcher;
import org.apache.rocketmq.store.DefaultMessageStore;

/**
 * The {@code reputDamage} knob: the broker's reput alone rebuilds {@code consumequeue/} and {@code index/}
 * from the commitlog's min offset over a damaged commitlog, as a plain {@code rebuild} models it.
 *
 * <p>A 5.x restart dispatches in its recovery, which checks every record and cuts the commitlog at the
 * first it cannot read, and its reput then starts at the end; so the reput never meets a damaged
 * record there. Here, with the queue folders deleted: the store's dispatchers are taken off during
 * {@code load()} (the recovery reads the undamaged commitlog and dispatches nothing), put back, then the
 * damage ({@code {"message": i, "field": "magic"|"totalSize", "value": n}}: that put's record's magic code or
 * totalSize set to {@code n}; {@code "offset"} instead of {@code "message"}: the record at that commitlog offset) is written into the commitlog file (the store's mapping sees it), the store
 * is started and its reput set to the commitlog's min offset (as {@code doRecheckReputOffsetFromCq} does
 * with empty queues, without its wait, which never ends when the reput stops). {@link #awaitQuiet} then waits
 * until nothing moves: {@code enableBuildConsumeQueueConcurrently=true}'s reput may stop for good before
 * the end.
 */
final class ReputOnly {
    private ReputOnly() {
    }

    /** The dispatchers, removed from the store (before {@code load()}). */
    static List<CommitLogDispatcher> takeDispatchers(DefaultMessageStore store) {
        List<CommitLogDispatcher> saved = new ArrayList<>(store.getDispatcherList());
        store.getDispatcherList().clear();
        return saved;
    }

    static void putDispatchers(DefaultMessageStore store, List<CommitLogDispatcher> saved) {
        store.getDispatcherList().addAll(saved);
    }

    /** Sets the record's magic code (byte 4) or totalSize (byte 0) to {@code value}, or adds {@code value} to
     *  its totalSize ({@code "totalSizeDelta"}), or sets its totalSize so that it reaches the start of the
     *  {@code value}-th record after it ({@code "totalSizeReach"}, following the undamaged totalSizes, a blank's
     *  to the end of its file) and {@code plus} bytes further, or makes it a blank whose totalSize runs
     *  {@code value} bytes past the end of its file ({@code "blankPast"}: magic code and totalSize);
     *  {@code "none"} leaves the commitlog as it is.
     *  Returns the record's totalSize before the damage (0 for {@code "none"}). */
    static int damage(File root, long segmentSize, long offset, String field, int value, int plus) throws IOException {
        if ("none".equals(field)) {
            return 0;
        }
        File seg = segmentFile(root, segmentSize, offset);
        int at;
        if ("magic".equals(field)) {
            at = 4;
        } else if ("totalSize".equals(field) || "totalSizeDelta".equals(field) || "totalSizeReach".equals(field)
            || "blankPast".equals(field)) {
            at = 0;
        } else {
            throw new IllegalArgumentException("reputDamage field " + field);
        }
        try (RandomAccessFile f = new RandomAccessFile(seg, "rw")) {
            long pos = offset % segmentSize;
            f.seek(pos);
            int size = f.readInt();
            int set = value;
            if ("totalSizeDelta".equals(field)) {
                set = size + value;
            } else if ("totalSizeReach".equals(field)) {
                long p = pos;
                for (int i = 0; i < value; i++) {
                    f.seek(p);
                    p += f.readInt();
                }
                set = (int) (p - pos) + plus;
            } else if ("blankPast".equals(field)) {
                set = (int) (segmentSize - pos) + value;
                f.seek(pos + 4);
                f.writeInt(0xCBD43194);
            }
            f.seek(pos + at);
            f.writeInt(set);
            return size;
        }
    }

    private static File segmentFile(File root, long segmentSize, long offset) {
        return new File(new File(root, "commitlog"), String.format("%020d", offset - offset % segmentSize));
    }

    /** The commitlog offset of the last record before the blank that ends segment number {@code index}. */
    static long lastRecord(File root, long segmentSize, int index) throws IOException {
        long base = index * segmentSize;
        try (RandomAccessFile f = new RandomAccessFile(segmentFile(root, segmentSize, base), "r")) {
            long pos = 0;
            long last = -1;
            while (true) {
                f.seek(pos);
                int size = f.readInt();
                int magic = f.readInt();
                if (magic == 0xCBD43194 || size <= 0) {
                    break;
                }
                last = pos;
                pos += size;
            }
            if (last < 0) {
                throw new IllegalStateException("no record in segment " + index);
            }
            return base + last;
        }
    }

    private static Object reputService(DefaultMessageStore store) throws ReflectiveOperationException {
        return Stores.field(store, DefaultMessageStore.class, "reputMessageService");
    }

    static void reputFrom(DefaultMessageStore store, long offset) throws ReflectiveOperationException {
        Object service = reputService(store);
        Method set = findMethod(service.getClass(), "setReputFromOffset", long.class);
        set.setAccessible(true);
        set.invoke(service, offset);
    }

    static long reputFromOffset(DefaultMessageStore store) throws ReflectiveOperationException {
        Object service = reputService(store);
        Method get = findMethod(service.getClass(), "getReputFromOffset");
        get.setAccessible(true);
        return (Long) get.invoke(service);
    }

    private static Method findMethod(Class<?> c, String name, Class<?>... args) throws NoSuchMethodException {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            try {
                return k.getDeclaredMethod(name, args);
            } catch (NoSuchMethodException e) {
                // the concurrent service inherits it
            }
        }
        throw new NoSuchMethodException(name);
    }

    private static Object fieldOrNull(Object owner, Class<?> c, String name) {
        try {
            Field f = c.getDeclaredField(name);
            f.setAccessible(true);
            return f.get(owner);
        } catch (ReflectiveOperationException e) {
            return null;  // 4.9.8: no concurrent reput
        }
    }

    /** What moves while the reput or its batch services work: reputFromOffset, the pages held by batches,
     *  the batches waiting for the executor, the orderly queue's read and write counts. */
    private static String state(DefaultMessageStore store) throws ReflectiveOperationException {
        Object hold = fieldOrNull(store, DefaultMessageStore.class, "mappedPageHoldCount");
        Object waiting = fieldOrNull(store, DefaultMessageStore.class, "batchDispatchRequestQueue");
        Object orderly = fieldOrNull(store, DefaultMessageStore.class, "dispatchRequestOrderlyQueue");
        String ptr = "";
        if (orderly != null) {
            ptr = fieldOrNull(orderly, orderly.getClass(), "ptr") + "/" + fieldOrNull(orderly, orderly.getClass(), "maxPtr");
        }
        return reputFromOffset(store) + " " + hold + " " + (waiting == null ? 0 : ((java.util.Collection<?>) waiting).size())
            + " " + ptr;
    }

    /** After a hung batch was seen: {@code mappedPageHoldCount} set to 0, so that the reput thread leaves its
     *  wait and the store can shut down (otherwise its shutdown waits for that thread's join time). The hung
     *  task never puts its requests, so {@code DispatchService} dispatches nothing more: the files the harness
     *  takes after the shutdown are those the broker had when it stood still. */
    static void releaseHeldPages(DefaultMessageStore store) {
        Object hold = fieldOrNull(store, DefaultMessageStore.class, "mappedPageHoldCount");
        if (hold instanceof java.util.concurrent.atomic.AtomicInteger) {
            ((java.util.concurrent.atomic.AtomicInteger) hold).set(0);
        } else if (hold instanceof java.util.concurrent.atomic.AtomicLong) {
            ((java.util.concurrent.atomic.AtomicLong) hold).set(0);
        }
    }

    private static boolean drained(String state) {
        String[] p = state.split(" ");
        if (p.length < 4 || p[1].equals("null")) {
            return true;
        }
        String[] ptr = p[3].split("/");
        return p[1].equals("0") && p[2].equals("0") && ptr[0].equals(ptr[1]);
    }

    /** Waits until the reput state has stood still for {@code quietMs}, drained, or for {@code hungMs} with a
     *  batch still held (a batch task that never ends: the reput thread then waits in {@code doReput}'s
     *  {@code finally} for ever); returns reputFromOffset, and whether a batch was still held in {@code hung[0]}.
     *  Fails after {@code timeoutMs}. */
    static long awaitQuiet(DefaultMessageStore store, long quietMs, long hungMs, long timeoutMs, boolean[] hung)
        throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        String last = state(store);
        long since = System.currentTimeMillis();
        while (true) {
            Thread.sleep(50);
            String now = state(store);
            if (!now.equals(last)) {
                last = now;
                since = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - since >= (drained(now) ? quietMs : hungMs)) {
                Thread.sleep(200);  // the dispatch service's last list, taken before the counts matched
                hung[0] = !drained(now);
                return reputFromOffset(store);
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the reput never stood still: " + now);
            }
        }
    }
}
