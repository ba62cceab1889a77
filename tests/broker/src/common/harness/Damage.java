package harness;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * Scenario knobs applied to a written store between the writes and the broker's restart rebuild.
 *
 * <p>{@code damageMessage} (an index into the scenario's put messages, sleeps not counted): one body
 * byte of that message's record (the first record of a batch) is flipped in its commitlog segment,
 * so that the restart's recovery, which checks body CRCs, cuts the commitlog there. {@code abort}:
 * an {@code abort} file is left in the store root, so that the restart recovers as after a crash.
 * With either knob, {@code <dir>/before/} receives the store as the restart finds it: the commitlog,
 * the checkpoint, the abort file, {@code config/topics.json} and a DLedger store's {@code dledger-<selfId>/}
 * (and, with {@code keepQueues}, the queue and index folders).
 */
final class Damage {
    private Damage() {
    }

    /** Flips the byte in the middle of the body of the record at commitlog offset {@code offset}. */
    static long flipBodyByte(File root, long segmentSize, long offset) throws IOException {
        File seg = new File(new File(root, "commitlog"), String.format("%020d", offset - offset % segmentSize));
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

    /** The store as the restart finds it, copied to {@code before}; with {@code queues}, its queue and
     *  index folders too (the restart keeps them). */
    static void keepBefore(File root, File before, boolean queues) throws IOException {
        for (String name : List.of("commitlog", "checkpoint", "abort", "config/topics.json")) {
            copyTree(new File(root, name), new File(before, name));
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
        Files.copy(from.toPath(), to.toPath(), StandardCopyOption.REPLACE_EXISTING);
    }
}
