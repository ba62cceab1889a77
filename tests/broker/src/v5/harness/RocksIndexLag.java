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
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/** A crash that lost batches of the 5.5 RocksDB message index (rocksdbstore/, default family) of a shut down
 *  store: the entries of every record after {@code last} deleted, and those of the record at {@code hole}
 *  (a lost batch before it), and lastOffsetPy set to {@code last} (the last batch that reached the disk ended
 *  with that record's unique key entry). */
final class RocksIndexLag {
    private RocksIndexLag() {
    }

    static int apply(File root, long last, long hole) throws Exception {
        RocksDB.loadLibrary();
        String path = new File(root, "rocksdbstore").getPath();
        List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        int index = -1;
        try (Options listing = new Options()) {
            for (byte[] name : RocksDB.listColumnFamilies(listing, path)) {
                if (Arrays.equals(name, RocksDB.DEFAULT_COLUMN_FAMILY)) {
                    index = descriptors.size();
                }
                descriptors.add(new ColumnFamilyDescriptor(name));
            }
        }
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        int deleted = 0;
        try (DBOptions options = new DBOptions(); RocksDB db = RocksDB.open(options, path, descriptors, handles)) {
            ColumnFamilyHandle family = handles.get(index);
            try (RocksIterator it = db.newIterator(family); WriteBatch batch = new WriteBatch();
                 WriteOptions write = new WriteOptions()) {
                for (it.seekToFirst(); it.isValid(); it.next()) {
                    byte[] key = it.key();
                    if (key.length < 17 || key[8] != '@') {  // lastOffsetPy, lastStoreTimeStamp
                        continue;
                    }
                    long at = ByteBuffer.wrap(key, key.length - 8, 8).getLong();
                    if (at > last || at == hole) {
                        batch.delete(family, key);
                        deleted++;
                    }
                }
                batch.put(family, "lastOffsetPy".getBytes(StandardCharsets.UTF_8),
                    ByteBuffer.allocate(8).putLong(last).array());
                db.write(write, batch);
            }
            for (ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
        return deleted;
    }
}
