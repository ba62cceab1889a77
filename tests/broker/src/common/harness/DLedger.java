package harness;

import com.google.gson.JsonObject;
import io.openmessaging.storage.dledger.DLedgerRpcNettyService;
import io.openmessaging.storage.dledger.DLedgerServer;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;
import java.io.IOException;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.dledger.DLedgerCommitLog;

/**
 * A single-node DLedger group ({@code enableDLegerCommitLog=true}) under {@code DLedgerCommitLog}:
 * the port of its peer address, its election, and what it wrote.
 *
 * <p>The group's one peer listens on the port of {@code dLegerPeers}; a scenario writes it as
 * {@code n0-127.0.0.1:{port}} and {@link #resolvePort} puts a free port in its place,
 * once per scenario (the broker.conf then holds the peers the broker ran with, as an operator's does).
 * On the 5.x lines the peer's server is bound to 127.0.0.1 ({@code NettyServerConfig.setBindAddress});
 * remoting 4.9.8 has no bind address and listens on the wildcard address.
 *
 * <p>DLedger writes {@code dledger-<selfId>/checkpoint} ({@code committedIndex}, {@code endIndex})
 * from its flush thread every {@code checkPointInterval} (3 s) and once more at shutdown, both with
 * {@code IOUtils.string2File} (write .tmp, delete, rename), which two threads at once can leave with
 * no checkpoint at all; the 5.x store's shutdown sleeps 3 s first, so the two meet often. The harness
 * sets the interval to an hour (only the first flush, at start, and the one at shutdown write it; not
 * a broker.conf setting), and after a restart waits until the node is leader and has committed its
 * whole log, so that the broker's rebuild covers it even when a checkpoint was lost or stale.
 */
final class DLedger {
    static final String PORT = "{port}";

    private DLedger() {
    }

    static boolean enabled(Properties props) {
        return Boolean.parseBoolean(props.getProperty("enableDLegerCommitLog", "false").trim());
    }

    /** A copy of {@code props} with every {@code {port}} replaced by one free port (see {@link #freePort}). */
    static Properties resolvePort(Properties props) throws IOException {
        Properties out = new Properties();
        out.putAll(props);
        Integer port = null;
        for (String k : props.stringPropertyNames()) {
            String v = props.getProperty(k);
            if (v.contains(PORT)) {
                if (port == null) {
                    port = freePort();
                }
                out.setProperty(k, v.replace(PORT, String.valueOf(port)));
            }
        }
        return out;
    }

    /** Ports the peers take: below Linux's ephemeral range (32768 and up), so that no outgoing connection
     *  of this or another process (Spark, the suite's other JVMs) is handed the port between the probe and
     *  the peer's bind, as an ephemeral port asked of the kernel can be. Each JVM starts at its own place
     *  (its pid) and takes the ports in turn; a probe skips those bound by anyone. */
    private static final int FIRST_PORT = 20000;
    private static final int PORTS = 12000;
    private static final AtomicInteger NEXT =
        new AtomicInteger((int) (ProcessHandle.current().pid() * 97 % PORTS));

    static synchronized int freePort() throws IOException {
        for (int tried = 0; tried < PORTS; tried++) {
            int port = FIRST_PORT + Math.floorMod(NEXT.getAndIncrement(), PORTS);
            // a bind without listen: nothing is reachable; on the wildcard address, so it fails when the
            // port is bound on any address (the 4.9.8 peer listens on the wildcard address)
            try (Socket probe = new Socket()) {
                probe.setReuseAddress(false);
                probe.bind(new InetSocketAddress(InetAddress.getByName("0.0.0.0"), port));
                return port;
            } catch (IOException taken) {
                // next one
            }
        }
        throw new IOException("no free port in " + FIRST_PORT + ".." + (FIRST_PORT + PORTS - 1));
    }

    static DLedgerCommitLog commitLog(DefaultMessageStore store) {
        return store.getCommitLog() instanceof DLedgerCommitLog ? (DLedgerCommitLog) store.getCommitLog() : null;
    }

    /** Before {@code store.start()}: one checkpoint writer at a time (see above), and the peer's server
     *  on 127.0.0.1 only where remoting can say so (5.x). Returns whether it could. */
    static boolean beforeStart(DefaultMessageStore store) throws ReflectiveOperationException {
        DLedgerCommitLog log = commitLog(store);
        if (log == null) {
            return false;
        }
        log.getdLedgerServer().getdLedgerConfig().setCheckPointInterval(3_600_000L);
        if (!(log.getdLedgerServer().getdLedgerRpcService() instanceof DLedgerRpcNettyService)) {
            return false;
        }
        Object server = ((DLedgerRpcNettyService) log.getdLedgerServer().getdLedgerRpcService()).getRemotingServer();
        Object config = null;
        for (Class<?> c = server.getClass(); c != null && config == null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField("nettyServerConfig");
                f.setAccessible(true);
                config = f.get(server);
            } catch (NoSuchFieldException e) {
                // up the hierarchy
            }
        }
        if (config == null) {
            return false;
        }
        try {
            config.getClass().getMethod("setBindAddress", String.class).invoke(config, "127.0.0.1");
            return true;
        } catch (NoSuchMethodException e) {
            return false;  // remoting 4.9.8: the wildcard address
        }
    }

    /** After {@code store.start()}: a single-node group elects itself before a put can succeed
     *  (before that DLedgerServer.handleAppend answers NOT_LEADER). Returns the wait in ms. */
    static long awaitLeader(DefaultMessageStore store, long timeoutMs) throws InterruptedException {
        DLedgerCommitLog log = commitLog(store);
        if (log == null) {
            return 0;
        }
        long start = System.currentTimeMillis();
        while (!log.getdLedgerServer().getMemberState().isLeader()) {
            if (System.currentTimeMillis() - start > timeoutMs) {
                throw new IllegalStateException("the DLedger node did not become leader in " + timeoutMs + " ms");
            }
            Thread.sleep(10);
        }
        return System.currentTimeMillis() - start;
    }

    /** After a restart: leader, and everything in the log committed (the committed position the reput
     *  reads up to). */
    static void awaitCommitted(DefaultMessageStore store, long timeoutMs) throws InterruptedException {
        DLedgerCommitLog log = commitLog(store);
        if (log == null) {
            return;
        }
        long deadline = System.currentTimeMillis() + timeoutMs;
        awaitLeader(store, timeoutMs);
        DLedgerMmapFileStore files = (DLedgerMmapFileStore) log.getdLedgerServer().getdLedgerStore();
        while (files.getCommittedIndex() < files.getLedgerEndIndex()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("DLedger committed index " + files.getCommittedIndex()
                    + " short of the end index " + files.getLedgerEndIndex());
            }
            Thread.sleep(10);
        }
    }

    /** What the DLedger store holds: its committed position and indexes, and where it begins. */
    static void report(DefaultMessageStore store, JsonObject out) {
        DLedgerCommitLog log = commitLog(store);
        if (log == null) {
            return;
        }
        DLedgerServer server = log.getdLedgerServer();
        DLedgerMmapFileStore files = (DLedgerMmapFileStore) server.getdLedgerStore();
        out.addProperty("dledgerCommittedPos", files.getCommittedPos());
        out.addProperty("dledgerCommittedIndex", files.getCommittedIndex());
        out.addProperty("dledgerBeginIndex", files.getLedgerBeginIndex());
        out.addProperty("dledgerEndIndex", files.getLedgerEndIndex());
        out.addProperty("dividedCommitlogOffset", log.getDividedCommitlogOffset());
    }
}
