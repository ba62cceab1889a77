package harness;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.DBOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

/** A RocksDB consume queue (consumequeue/, family "offset") of a shut down store whose max-physical-offset
 *  checkpoint (the key of topic CHECKPOINT_TOPIC) is set to {@code offset}: as a database whose dispatch the
 *  commitlog's records no longer match. */
final class RocksCqCheckpoint {
    private RocksCqCheckpoint() {
    }

    static long apply(File root, long offset) throws Exception {
        RocksDB.loadLibrary();
        String path = new File(root, "consumequeue").getPath();
        List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        int index = -1;
        try (Options listing = new Options()) {
            for (byte[] name : RocksDB.listColumnFamilies(listing, path)) {
                if (Arrays.equals(name, "offset".getBytes(StandardCharsets.UTF_8))) {
                    index = descriptors.size();
                }
                descriptors.add(new ColumnFamilyDescriptor(name));
            }
        }
        if (index < 0) {
            throw new IllegalStateException("rocksdbCqCheckpoint: no offset family in " + path);
        }
        byte[] topic = "CHECKPOINT_TOPIC".getBytes(StandardCharsets.UTF_8);
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        long before = -1;
        try (DBOptions options = new DBOptions(); RocksDB db = RocksDB.open(options, path, descriptors, handles)) {
            ColumnFamilyHandle family = handles.get(index);
            byte[] found = null;
            try (RocksIterator it = db.newIterator(family)) {
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    if (contains(it.key(), topic)) {
                        found = it.key();
                        before = ByteBuffer.wrap(it.value()).getLong(0);
                    }
                }
            }
            if (found == null) {
                throw new IllegalStateException("rocksdbCqCheckpoint: no checkpoint entry in " + path);
            }
            db.put(family, found, ByteBuffer.allocate(8).putLong(offset).array());
            db.flushWal(true);
            for (ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
        return before;
    }

    private static boolean contains(byte[] key, byte[] part) {
        outer:
        for (int i = 0; i + part.length <= key.length; i++) {
            for (int j = 0; j < part.length; j++) {
                if (key[i + j] != part[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }
}
