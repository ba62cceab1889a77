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
