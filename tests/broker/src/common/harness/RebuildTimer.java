package harness;

import com.google.gson.JsonObject;
import java.io.File;
import java.util.Collections;
import java.util.Properties;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * The broker's own rebuild of a store's consume queues and index, timed (the bar of
 * {@code python -m pipelines.bench}): a store is opened on an existing commitlog folder with
 * consumequeue/, index/ and the checkpoint absent (a scratch root holds what the broker writes),
 * loaded (DefaultMessageStore.load: the commitlog's recovery, and on 5.x its own dispatch when the
 * queues are gone) and started (the reput thread dispatches the rest), until the reput has caught up
 * with the commitlog's max offset. Prints one JSON line: seconds of load and of dispatch, the max
 * offset. The scratch root is deleted afterwards.
 *
 * <p>Arguments: commitlog folder, scratch root, then broker.conf settings as key=value.
 */
public final class RebuildTimer {
    private RebuildTimer() {
    }

    public static void main(String[] args) throws Exception {
        File commitlog = new File(args[0]);
        File root = new File(args[1]);
        Properties props = new Properties();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.setProperty(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Stores.deleteTree(root);
        if (!root.mkdirs()) {
            throw new IllegalStateException("cannot create " + root);
        }
        MessageStoreConfig config = Stores.storeConfig(props, root, BrokerRole.ASYNC_MASTER);
        config.setStorePathCommitLog(commitlog.getAbsolutePath());
        DefaultMessageStore store = LineAdapter.newStore(config, Stores.brokerConfig(props),
            Collections.<String>emptySet());
        JsonObject out = new JsonObject();
        try {
            long t0 = System.nanoTime();
            if (!store.load()) {
                throw new IllegalStateException("store load failed");
            }
            long t1 = System.nanoTime();
            store.start();
            LineAdapter.afterStart(store);
            Stores.awaitDispatched(store, 3_600_000L);
            long t2 = System.nanoTime();
            out.addProperty("line", LineAdapter.LINE);
            out.addProperty("loadSeconds", (t1 - t0) / 1e9);
            out.addProperty("dispatchSeconds", (t2 - t1) / 1e9);
            out.addProperty("maxPhyOffset", store.getMaxPhyOffset());
            out.addProperty("consumeQueueFiles", count(new File(root, "consumequeue")));
            out.addProperty("indexFiles", count(new File(root, "index")));
        } finally {
            Stores.shutdown(store);   // never destroy(): that deletes the commitlog's files too
            Stores.deleteTree(root);
        }
        System.out.println(out);
        System.out.flush();
        System.exit(0);  // the store's pools may keep non-daemon threads
    }

    private static int count(File dir) {
        int n = 0;
        File[] children = dir.listFiles();
        if (children != null) {
            for (File c : children) {
                n += c.isDirectory() ? count(c) : 1;
            }
        }
        return n;
    }
}
