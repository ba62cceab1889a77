package harness;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;

/**
 * Scenario knobs applied to a written store between the writes and the broker's restart rebuild.
 *
 * <p>{@code damageMessage} (an index into the scenario's put messages, sleeps not counted): one body
 * byte of that message's record (the first record of a batch) is flipped in its commitlog segment (a
 * DLedger store's data file), so that the restart's recovery, which checks body CRCs, cuts the commitlog
 * there (a DLedger crash recovery's walk ends there; DLedger's own recovery reads no CRC). {@code abort}:
 * an {@code abort} file is left in the store root, so that the restart recovers as after a crash.
 * With either knob, {@code <dir>/before/} receives the store as the restart finds it: the commitlog,
 * the checkpoint, the abort file, {@code config/topics.json} and a DLedger store's {@code dledger-<selfId>/}
 * (and, with {@code keepQueues}, the queue and index folders).
 */
final class Damage {
    private Damage() {
    }

    /** The commitlog segment, or on a DLedger store the data file, holding commitlog offset {@code offset}. */
    static File segmentOf(File root, long segmentSize, long offset) {
        String name = String.format("%020d", offset - offset % segmentSize);
        File seg = new File(new File(root, "commitlog"), name);
        File[] dledger = root.listFiles((d, n) -> n.startsWith("dledger-"));
        if (!seg.isFile() && dledger != null && dledger.length == 1) {  // a record 48 bytes into its entry, same file
            seg = new File(new File(dledger[0], "data"), name);
        }
        return seg;
    }

    /** Flips the byte in the middle of the body of the record at commitlog offset {@code offset} (on a DLedger
     *  store, in its data file: DLedger's own entry CRC is not checked by its recovery). */
    static long flipBodyByte(File root, long segmentSize, long offset) throws IOException {
        File seg = segmentOf(root, segmentSize, offset);
        try (RandomAccessFile f = new RandomAccessFile(seg, "rw")) {
            long pos = offset % segmentSize;
            f.seek(pos + 36);
            int sysFlag = f.readInt();
            int bornHost = (sysFlag & 0x10) != 0 ? 20 : 8;
            int storeHost = (sysFlag & 0x20) != 0 ? 20 : 8;
            long bodyLenAt = pos + 48 + bornHost + 8 + storeHost + 4 + 8;
            f.seek(bodyLenAt);
            int bodyLen = f.readInt();
            if (bodyLen <= 0) {
                throw new IllegalArgumentException("damageMessage: the record at " + offset + " has no body");
            }
            long at = bodyLenAt + 4 + bodyLen / 2;
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0xFF);
            return offset - pos + at;
        }
    }

    /** Flips the lowest byte of the magic code (record position 7) of the record at commitlog offset
     *  {@code offset} (on a DLedger store, in its data file, after the entry's header): a code that is no record's
     *  and no blank's, which DLedger's own recovery does not read; returns the flipped byte's offset. */
    static long flipMagicByte(File root, long segmentSize, long offset) throws IOException {
        return flipByte(root, segmentSize, offset, 7);
    }

    /** Flips the lowest byte of the bornTimestamp field (record position 47) of the record at commitlog offset
     *  {@code offset}: a byte outside the body, which only a 5.x CRC32 property covers; returns its offset. */
    static long flipBornTimestampByte(File root, long segmentSize, long offset) throws IOException {
        return flipByte(root, segmentSize, offset, 47);
    }

    /** Flips the byte {@code field} bytes into the record at commitlog offset {@code offset} ({@link #segmentOf});
     *  returns the flipped byte's commitlog offset. */
    private static long flipByte(File root, long segmentSize, long offset, int field) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(segmentOf(root, segmentSize, offset), "rw")) {
            long at = offset % segmentSize + field;
            f.seek(at);
            int b = f.read();
            f.seek(at);
            f.write(b ^ 0xFF);
            return offset - offset % segmentSize + at;
        }
    }

    /** Writes the CRC32 property of the record at commitlog offset {@code offset} again over its bytes as they
     *  are now (5.x, records written with {@code enabledAppendPropCRC=true}): {@link LineAdapter#refreshPropCrc}. */
    static void refreshPropCrc(File root, long segmentSize, long offset) throws IOException {
        File seg = new File(new File(root, "commitlog"), String.format("%020d", offset - offset % segmentSize));
        try (RandomAccessFile f = new RandomAccessFile(seg, "rw")) {
            long pos = offset % segmentSize;
            f.seek(pos);
            byte[] record = new byte[f.readInt()];
            f.seek(pos);
            f.readFully(record);
            LineAdapter.refreshPropCrc(java.nio.ByteBuffer.wrap(record));
            f.seek(pos);
            f.write(record);
        }
    }

    /** Writes {@code value} into the physicalOffset field (record position 28) of the record at commitlog
     *  offset {@code offset}. */
    static void setOffsetField(File root, long segmentSize, long offset, long value) throws IOException {
        File seg = new File(new File(root, "commitlog"), String.format("%020d", offset - offset % segmentSize));
        try (RandomAccessFile f = new RandomAccessFile(seg, "rw")) {
            f.seek(offset % segmentSize + 28);
            f.writeLong(value);
        }
    }

    /** Writes {@code bytes} {@code add} bytes past the record at commitlog offset {@code offset} (in its segment,
     *  {@link #segmentOf}), with {@code fieldAt} >= 0 that record's offset as a long {@code fieldAt} bytes into them
     *  (a planted message's physicalOffset field); returns the planted bytes' commitlog offset. */
    static long plantBytes(File root, long segmentSize, long offset, int add, byte[] bytes, int fieldAt)
        throws IOException {
        byte[] b = bytes.clone();
        if (fieldAt >= 0) {
            ByteBuffer.wrap(b).putLong(fieldAt, offset);
        }
        long pos = offset % segmentSize + add;
        if (pos + b.length > segmentSize) {
            throw new IllegalArgumentException("plantBytes: past the segment of the record at " + offset);
        }
        try (RandomAccessFile f = new RandomAccessFile(segmentOf(root, segmentSize, offset), "rw")) {
            f.seek(pos);
            f.write(b);
        }
        return offset - offset % segmentSize + pos;
    }

    /** The checkpoint's logicsPhysicalOffset (byte 40) set to {@code base} (null: its value) plus {@code add};
     *  returns the value written. */
    static long setCheckpointLogicsPhysicalOffset(File root, Long base, long add) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(new File(root, "checkpoint"), "rw")) {
            f.seek(40);
            long value = (base != null ? base : f.readLong()) + add;
            f.seek(40);
            f.writeLong(value);
            return value;
        }
    }

    /** In the queue folder {@code queue} (units of {@code unitSize} bytes: commitlog offset, size), zeroes
     *  its last {@code units} units of records below commitlog offset {@code below} and every unit after
     *  them (the files keep their lengths). {@code queue} a layout folder ({@code consumequeue},
     *  {@code batchconsumequeue}): the queue holding the last record below {@code below}. */
    static void zeroQueueTail(File queue, int units, int unitSize, long below) throws IOException {
        if (queue.getName().matches("consumequeue|batchconsumequeue")) {  // the queue of the
            File best = null;                      // last record below {@code below}
            long bestOffset = -1;
            for (File topic : listed(queue)) {
                for (File q : listed(topic)) {
                    for (File f : listed(q)) {
                        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(Files.readAllBytes(f.toPath()));
                        for (int at = 0; at + unitSize <= b.capacity() && b.getInt(at + 8) > 0; at += unitSize) {
                            if (b.getLong(at) < below && b.getLong(at) > bestOffset) {
                                bestOffset = b.getLong(at);
                                best = q;
                            }
                        }
                    }
                }
            }
            if (best == null) {
                throw new IOException("no unit below " + below + " in " + queue);
            }
            queue = best;
        }
        String[] names = queue.list();
        if (names == null || names.length == 0) {
            throw new IOException("no queue files in " + queue);
        }
        java.util.Arrays.sort(names);
        List<long[]> found = new java.util.ArrayList<>();   // {file index, byte position} of each such unit
        for (int f = 0; f < names.length; f++) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(Files.readAllBytes(new File(queue, names[f]).toPath()));
            for (int at = 0; at + unitSize <= b.capacity() && b.getInt(at + 8) > 0; at += unitSize) {
                if (b.getLong(at) < below) {
                    found.add(new long[] {f, at});
                }
            }
        }
        long[] from = found.isEmpty() ? new long[] {0, 0} : found.get(Math.max(0, found.size() - units));
        for (int f = (int) from[0]; f < names.length; f++) {
            File file = new File(queue, names[f]);
            byte[] data = Files.readAllBytes(file.toPath());
            java.util.Arrays.fill(data, f == from[0] ? (int) from[1] : 0, data.length, (byte) 0);
            Files.write(file.toPath(), data);
        }
    }

    private static File[] listed(File dir) {
        File[] files = dir.listFiles();
        return files == null ? new File[0] : files;
    }

    /** The store as the restart finds it, copied to {@code before}; with {@code queues}, its queue and
     *  index folders too (the restart keeps them); with {@code rocksdbStore}, {@code rocksdbstore/}. */
    static void keepBefore(File root, File before, boolean queues, boolean rocksdbStore) throws IOException {
        for (String name : List.of("commitlog", "checkpoint", "abort", "config/topics.json")) {
            copyTree(new File(root, name), new File(before, name));
        }
        if (rocksdbStore) {  // 5.5.1 MessageRocksDBStorage's database (indexRocksDBEnable, transRocksDBEnable)
            copyTree(new File(root, "rocksdbstore"), new File(before, "rocksdbstore"));
        }
        File[] dledger = root.listFiles((d, n) -> n.startsWith("dledger-"));  // a DLedger store's data, index, checkpoint
        for (File f : dledger == null ? new File[0] : dledger) {
            copyTree(f, new File(before, f.getName()));
        }
        if (queues) {
            for (String name : List.of("consumequeue", "consumequeue_ext", "batchconsumequeue", "index")) {
                copyTree(new File(root, name), new File(before, name));
            }
        }
    }

    static void copyTree(File from, File to) throws IOException {
        if (!from.exists()) {
            return;
        }
        if (from.isDirectory()) {
            if (!to.isDirectory() && !to.mkdirs()) {
                throw new IOException("cannot create " + to);
            }
            File[] children = from.listFiles();
            for (File c : children == null ? new File[0] : children) {
                copyTree(c, new File(to, c.getName()));
            }
            return;
        }
        File parent = to.getParentFile();
        if (!parent.isDirectory() && !parent.mkdirs()) {
            throw new IOException("cannot create " + parent);
        }
        if (from.length() > SPARSE_BY_CP && cpSparse(from, to)) {
            return;
        }
        sparseCopy(from, to);
    }

    /** Files larger than this are copied by {@code cp --sparse=always}, which skips the source's holes
     *  (SEEK_DATA/SEEK_HOLE) where reading them back zero-filled the page cache: reading the 160 MiB DLedger index
     *  files took a quarter of the writer's CPU. */
    private static final long SPARSE_BY_CP = 4L << 20;

    /** {@code cp --sparse=always from to}: whether it copied (false where there is no such cp: then the caller
     *  copies in Java). */
    private static boolean cpSparse(File from, File to) throws IOException {
        try {
            Process p = new ProcessBuilder("cp", "--sparse=always", from.getPath(), to.getPath())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted copying " + from, e);
        }
    }

    /** A copy of {@code from} whose runs of zeros of a whole chunk are left as holes: a store's preallocated
     *  files (a DLedger index file is 160 MiB, nearly all zeros) then cost no disk in the copies, which over
     *  the suite's hundreds of stores are tens of GB. The bytes read back are the same. */
    private static void sparseCopy(File from, File to) throws IOException {
        final int chunk = 1 << 20;
        try (FileChannel in = FileChannel.open(from.toPath(), StandardOpenOption.READ);
             RandomAccessFile raf = new RandomAccessFile(to, "rw")) {
            long size = in.size();
            raf.setLength(0);
            raf.setLength(size);
            FileChannel out = raf.getChannel();
            ByteBuffer buf = ByteBuffer.allocate(chunk);
            long pos = 0;
            while (pos < size) {
                buf.clear();
                int n = in.read(buf, pos);
                if (n <= 0) {
                    throw new IOException("short read of " + from + " at " + pos);
                }
                if (!zeros(buf.array(), n)) {
                    buf.flip();
                    long at = pos;
                    while (buf.hasRemaining()) {
                        at += out.write(buf, at);
                    }
                }
                pos += n;
            }
        }
    }

    private static final byte[] ZERO_CHUNK = new byte[1 << 20];

    /** Whether the first {@code n} bytes of {@code b} are all zero: {@code Arrays.mismatch} compares eight bytes
     *  at a time, where a loop over bytes took half the writer's CPU (the harness runs at C1). */
    private static boolean zeros(byte[] b, int n) {
        return Arrays.mismatch(b, 0, n, ZERO_CHUNK, 0, n) < 0;
    }
}
