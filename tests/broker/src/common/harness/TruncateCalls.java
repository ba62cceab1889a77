package harness;

import java.util.Collections;
import java.util.WeakHashMap;
import java.util.Map;

/**
 * The {@code DefaultMessageStore.truncateDirtyLogicFiles(phyOffset)} calls of each store the harness opened
 * ({@code LineAdapter.newStore} makes stores that report them here): whether the commitlog's recovery
 * ({@code CommitLog.recoverNormally}/{@code recoverAbnormally}) called it, and with which offset. Stores of
 * several scenarios run at once, so calls are kept per store object (DefaultMessageStore keeps Object's
 * identity equals; weakly held: a store no longer used is forgotten).
 */
public final class TruncateCalls {
    private static final Map<Object, Long> LAST = Collections.synchronizedMap(new WeakHashMap<>());

    private TruncateCalls() {
    }

    static void record(Object store, long phyOffset) {
        LAST.put(store, phyOffset);
    }

    /** The offset of the store's last call, -1 when there was none. */
    static long last(Object store) {
        Long at = LAST.get(store);
        return at == null ? -1 : at;
    }
}
