package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;

/**
 * Writes scenario stores with the broker's own store, as the shared golden stores were made.
 *
 * <p>Usage: {@code Writer SCENARIOS.json [THREADS]} (a JSON array; THREADS scenarios at a time,
 * default 1: a store's shutdown sleeps 1 s on 4.9.8 and 3 s on 5.x, which threads overlap). For each
 * scenario, in its {@code dir}: the messages go through
 * {@code DefaultMessageStore.putMessage/putMessages} of a started master store; after a clean
 * shutdown {@code consumequeue/} (and {@code consumequeue_ext/}) and {@code index/} are deleted and the
 * store is started again with
 * the scenario's settings, so that the reput thread rebuilds them from the commitlog; once it has
 * dispatched to the commitlog's max offset the store is shut down and those files are moved to
 * {@code expected/} (with {@code consumequeue_ext/} when the broker wrote one; with 5.5.1's
 * {@code indexRocksDBEnable} or {@code transRocksDBEnable}, {@code rocksdbstore/} too: the database the
 * first run's dispatch filled, kept across the restart, whose reput adds to it). {@code store/} then holds
 * only {@code commitlog/}, and
 * {@code broker.conf} the settings. One JSON line per scenario goes to stdout.
 *
 * <p>DLedger stores ({@code enableDLegerCommitLog=true}, see {@link DLedger}): the store is the same
 * {@code DefaultMessageStore} over {@code DLedgerCommitLog}; after each start the writer waits until
 * the single-node group has elected itself, and {@code store/} keeps {@code commitlog/} (when the
 * broker made one) and {@code dledger-<selfId>/} (data, index, checkpoint, currterm). A message
 * object {@code {"switchToDLedger": true}} makes a store converted in place: the messages before it
 * are put with an ordinary commitlog ({@code enableDLegerCommitLog=false}), the store is shut down
 * and started again with the scenario's settings, and the rest go into DLedger (with nothing after it, the
 * store is not started again: the restart is the first start with DLedger, with no DLedger data file). 4.9.8's
 * {@code start()} sets the reput from the consume queues (none left: the commitlog's min offset);
 * 5.x's starts it at the commitlog's confirm offset, which for DLedger is the committed position,
 * so nothing would be dispatched again: on the 5.x lines a DLedger scenario must carry
 * {@code recheckReputOffsetFromCq=true} in its settings (the writer refuses it otherwise), as a
 * DLedger operator's broker.conf must; it holds for every start of the scenario and goes into
 * broker.conf. A scenario that says {@code "restartRebuildsNothing": true} may leave it out: its
 * restart then writes no consume queue or index file, which is what it checks; so may one with
 * {@code abort} (a crash: {@code dledgerRecoverAbnormally} dispatches the entries itself).
 *
 * <p>BatchCQ topics (5.x; scenario field {@code batchTopics}, a list of topic names): before the
 * first start the writer writes {@code store/config/topics.json} as the broker's TopicConfigManager
 * does, those topics with the attribute {@code queue.type=BatchCQ}, and every opening of the store
 * reads it (the 5.x line's {@code LineAdapter.newStore}), so the broker keeps their queues in
 * {@code batchconsumequeue/} (BatchConsumeQueue). A {@code batch} object for such a topic that
 * carries a {@code uniqKey} (the batch's own unique id, which a producer always sets) is put the way
 * SendMessageProcessor puts it, as one inner-batch record ({@code LineAdapter.putInnerBatch});
 * without one, with putMessages like any batch. The rebuild then deletes {@code batchconsumequeue/}
 * too and moves the broker's into {@code expected/}, and {@code store/} keeps
 * {@code config/topics.json}. The line adds {@code batchQueueMaxOffsets} ("topic/queueId": the
 * queue's max offset after the rebuild, which counts the messages of inner batches).
 *
 * <p>Restart knobs ({@link Damage}): {@code damageMessage} flips a body byte of that message's record
 * and {@code abort} leaves an abort file before the restart ({@code dropRocksdbStore} deletes {@code rocksdbstore/}
 * before it: the restart creates the database empty; {@code rocksdbIndexLag} {@code {"put": i, "hole": j}} deletes
 * the index entries of the records after put i and of put j and sets lastOffsetPy to put i's record, as a crash
 * that lost the index thread's batches leaves it, see RocksIndexLag; {@code rocksdbCqCheckpoint} {@code {"put": i,
 * "add": n}} sets a kept RocksDB consume queue's max-physical-offset checkpoint to put i's offset + n, see
 * RocksCqCheckpoint); {@code <dir>/before/} then keeps the store
 * as the restart found it (with {@code indexRocksDBEnable} or {@code transRocksDBEnable}, 5.5.1, its
 * {@code rocksdbstore/} too), and the line adds {@code damagedRecord} and {@code damagedByte}; with
 * {@code refreshPropCrc} (5.x, {@code enabledAppendPropCRC=true}) the damaged record's CRC32 property is then
 * written again over its bytes, so that it holds while the body CRC fails. {@code damageHead} (an index into
 * the puts) flips the lowest byte of that record's bornTimestamp instead: the body CRC holds, the CRC32
 * property (if any) fails; the line adds the same. With
 * {@code keepQueues} the restart keeps {@code consumequeue/}, {@code consumequeue_ext/},
 * {@code batchconsumequeue/} and {@code index/} (so does {@code before/}), and the line adds
 * {@code queuesAfterLoad} (every queue after {@code load()}, which recovers the queues and the commitlog)
 * and {@code queuesAfterDispatch} (once the reput has caught up), see {@link QueueStates}, and
 * {@code truncateDirtyLogicFilesAt} (the offset the recovery called {@code truncateDirtyLogicFiles} with,
 * -1: not called, see {@link TruncateCalls}); {@code expected/} then holds the broker's files after that
 * restart; {@code reportQueues} adds {@code queuesAfterDispatch} alone (the queues deleted as usual).
 * {@code zeroQueueTail} ({@code {"path": "consumequeue/T/0", "units": n, "unitSize": 20}}) zeroes
 * that queue's last {@code n} units of records before the damaged one and every unit after them, before
 * the restart (a queue whose last units never reached the disk); a path naming only the layout folder
 * picks the queue of the last record before the damaged one. {@code dledgerCommittedBack} (an int) lowers the
 * {@code committedIndex} of DLedger's checkpoint by that many entries before the restart (a crash before
 * the group committed them). {@code damageOffsetField} (an index into the puts, as {@code damageMessage})
 * writes that record's physicalOffset field as its offset plus four segment sizes (its body CRC still holds;
 * the line adds {@code damagedOffsetRecord}); {@code damageMagic} (an index into the puts) flips a byte of
 * that message's magic code (on a DLedger store after its entry's header), which a check without CRC sees too
 * (the line adds {@code damagedMagicRecord} and {@code damagedMagicByte}); {@code plantBytes}
 * ({@code {"put": i, "add": n, "bytes": base64, "offsetFieldAt": k}}) writes those bytes {@code n} bytes past that
 * put's record (after {@code damageMagic}), with {@code offsetFieldAt} the record's offset as a long {@code k} bytes
 * into them (a planted message's physicalOffset field: {@code k} = 28); the line adds {@code plantedAt} (the
 * planted bytes' commitlog offset); {@code checkpointLogicsPhysicalOffset}
 * ({@code "set": n} or
 * {@code "put": i}, the offset of that put's record, and/or {@code "add": n}) changes the checkpoint's
 * logicsPhysicalOffset (the line adds the value the restart finds); with {@code loadMayFail} a restart whose
 * {@code load()} fails is reported ({@code loadFailed}) instead of failing the scenario. {@code restartCopies}
 * (an int) runs that restart again on as many fresh copies of {@code before/} ({@link #restartCopies}).
 * {@code plantFiles} ({@code {relative path: base64 bytes}}) writes those files into {@code store/} and
 * {@code before/} after the queue folders are deleted, before the restart opens the store ({@link #plantFiles}).
 * {@code restartDamage} (as {@code reputDamage}'s damage: {@code segmentLast}, {@code offset} or {@code message},
 * {@code field}, {@code value}, {@code plus}) damages that record before the restart instead (the restart's recovery
 * and reput both find it; {@code before/} holds it); the line adds {@code damagedRecord} and {@code damagedSize}.
 * {@code plantUnits} plants consume queue files of units that may name the records of given puts
 * ({@link #plantUnits}).
 * {@code reputDamage} ({@link ReputOnly}; its {@code also}, a list of more damages applied after it, at their
 * {@code offset}s or the records of their {@code message}s, indexes into the puts):
 * the restart's recovery dispatches nothing, one record is damaged after it, and the reput alone dispatches
 * from the commitlog's min offset until it stands still (it may stop for good before the end); {@code store/}
 * keeps the damaged commitlog and the line adds {@code damagedRecord} and {@code reputStoodAt}.
 *
 * <p>{@code putSettings} (settings, as {@code config}) override the scenario's for the puts alone: e.g.
 * {@code enableLmq=false} there leaves a message's own {@code INNER_MULTI_QUEUE_OFFSET} as the client set it (with
 * it the put path writes its own), while the restart's reput runs with {@code enableLmq=true}.
 *
 * <p>A {@code {"sleepMs": n}} message pauses the puts; on a DLedger store the write phase then also waits until the
 * checkpoint's {@code logicsMsgTimestamp} is the last dispatch's for good ({@link Stores#awaitCheckpointTimestamps})
 * and the line adds {@code checkpointLogicsTimestampRewritten} (how often that value had to be written again).
 * A DLedger crash scenario ({@code abort}) without one means the 5.3.3 walk from the first data file: the line adds
 * {@code crashWalkStartFile} (the broker's own check, {@link WalkStart#startFile}); when it is a later file
 * (puts slowed 3 s past that file's start) the checkpoint's timestamps are lowered until it is the first
 * ({@link WalkStart#firstFile}: the line adds {@code checkpointTimestampsSet}); should it still be a later one the
 * store is written again, once, and the line adds {@code crashWalkRewritten} (why); a second miss fails it.
 * {@code crashWalkFromCheckpoint} leaves the walk's start as the checkpoint sets it (a store past 2 GiB whose
 * thorough checkpoint flush means the walk from its last data file).
 */
public final class Writer {
    private Writer() {
    }

    public static void main(String[] args) throws Exception {
        JsonArray scenarios = JsonParser.parseString(
            new String(Files.readAllBytes(new File(args[0]).toPath()), StandardCharsets.UTF_8)).getAsJsonArray();
        int threads = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Boolean>> done = new ArrayList<>();
        for (JsonElement e : scenarios) {
            done.add(pool.submit(() -> writeOne(e.getAsJsonObject())));
        }
        int failed = 0;
        for (Future<Boolean> f : done) {
            failed += f.get() ? 0 : 1;
        }
        pool.shutdown();
        System.exit(failed == 0 ? 0 : 1);
    }

    /** One scenario, its line printed when it is done (in that order with several threads). */
    static boolean writeOne(JsonObject sc) {
        JsonObject out = new JsonObject();
        out.addProperty("name", sc.get("name").getAsString());
        boolean ok = true;
        try {
            try {
                write(sc, out);
            } catch (WalkStart.Moved moved) {   // puts slowed past the checkpoint's 3 s: the store written again once
                for (String k : new ArrayList<>(out.keySet())) {
                    out.remove(k);
                }
                out.addProperty("name", sc.get("name").getAsString());
                out.addProperty("crashWalkRewritten", moved.getMessage());
                WalkStart.alone(() -> write(sc, out));
            }
            out.addProperty("ok", true);
        } catch (Exception | LinkageError ex) {  // a missing class would leave the store's threads running
            ok = false;
            out.addProperty("ok", false);
            out.addProperty("error", ex.toString());
        }
        synchronized (System.out) {
            System.out.println(out);
            System.out.flush();
        }
        return ok;
    }

    static void write(JsonObject sc, JsonObject out) throws Exception {
        File dir = new File(sc.get("dir").getAsString());
        File root = new File(dir, "store");
        Stores.deleteTree(dir);
        Properties props = DLedger.resolvePort(Stores.properties(sc.getAsJsonObject("config")));
        boolean dledger = DLedger.enabled(props);
        if (dledger && LineAdapter.LINE.equals("5") && !sc.has("restartRebuildsNothing") && !sc.has("abort")
            && !sc.has("reputDamage")
            && !Boolean.parseBoolean(props.getProperty("recheckReputOffsetFromCq", "false").trim())) {
            throw new IllegalArgumentException("a DLedger scenario on 5.x needs recheckReputOffsetFromCq=true: "
                + "without it the restart's reput starts at the committed position and rebuilds nothing");
        }
        JsonArray messages = sc.getAsJsonArray("messages");
        Set<String> topics = topics(messages);
        Set<String> batchTopics = new LinkedHashSet<>();
        if (sc.has("batchTopics")) {
            for (JsonElement t : sc.getAsJsonArray("batchTopics")) {
                batchTopics.add(t.getAsString());
            }
        }
        if (!batchTopics.isEmpty()) {
            Set<String> all = new LinkedHashSet<>(topics);
            all.addAll(batchTopics);
            LineAdapter.writeTopicsJson(root, all, batchTopics);
        }

        // the phases: before a {"switchToDLedger": true} the commitlog is an ordinary one
        List<JsonArray> phases = new ArrayList<>();
        phases.add(new JsonArray());
        for (JsonElement m : messages) {
            if (m.getAsJsonObject().has("switchToDLedger")) {
                check(dledger && phases.size() == 1,
                    "switchToDLedger: once, in a scenario with enableDLegerCommitLog=true");
                phases.add(new JsonArray());
            } else {
                phases.get(phases.size() - 1).add(m);
            }
        }
        Map<String, Integer> statuses = new TreeMap<>();
        List<Long> wrote = new ArrayList<>();
        for (int i = 0; i < phases.size(); i++) {
            if (i > 0 && phases.get(i).size() == 0) {  // nothing after the switch: the restart is DLedger's first start
                continue;
            }
            Properties phaseProps = props;
            if (phases.size() > 1 && i == 0) {
                phaseProps = new Properties();
                phaseProps.putAll(props);
                phaseProps.setProperty("enableDLegerCommitLog", "false");
            }
            if (sc.has("putSettings")) {  // settings of the puts alone (the restart's stay the scenario's)
                Properties put = new Properties();
                put.putAll(phaseProps);
                put.putAll(Stores.properties(sc.getAsJsonObject("putSettings")));
                phaseProps = put;
            }
            if (dledger && sc.has("reputDamage")) {
                // the concurrent reput stops at the first DLedger entry: the puts' own dispatch (its queues are
                // deleted before the reput that is looked at) runs without it, so that the wait for it ends
                Properties off = new Properties();
                off.putAll(phaseProps);
                off.setProperty("enableBuildConsumeQueueConcurrently", "false");
                phaseProps = off;
            }
            put(phaseProps, root, topics, batchTopics, phases.get(i), statuses, out, wrote,
                sc.has("abort") && sc.get("abort").getAsBoolean() && !sc.has("crashWalkFromCheckpoint"));
        }
        JsonObject st = new JsonObject();
        statuses.forEach(st::addProperty);
        out.add("putStatuses", st);

        // the broker's own rebuild: consumequeue/ (with consumequeue_ext/) and index/ gone, the store
        // started again
        long damagedAt = Long.MAX_VALUE;
        if (sc.has("damageMessage")) {
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            long at = wrote.get(sc.get("damageMessage").getAsInt());
            out.addProperty("damagedRecord", at);
            damagedAt = at;
            out.addProperty("damagedByte", Damage.flipBodyByte(root, segmentSize, at));
            if (sc.has("refreshPropCrc") && sc.get("refreshPropCrc").getAsBoolean()) {  // the CRC32 property holds
                Damage.refreshPropCrc(root, segmentSize, at);
            }
        }
        if (sc.has("restartDamage")) {  // a reputDamage-like damage the restart finds (before/ holds it)
            JsonObject d = sc.getAsJsonObject("restartDamage");
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            long at = d.has("offset") ? d.get("offset").getAsLong() : d.has("segmentLast")
                ? ReputOnly.lastRecord(root, segmentSize, d.get("segmentLast").getAsInt())
                : wrote.get(d.get("message").getAsInt());
            out.addProperty("damagedSize", ReputOnly.damage(root, segmentSize, at, d.get("field").getAsString(),
                d.get("value").getAsInt(), d.has("plus") ? d.get("plus").getAsInt() : 0));
            out.addProperty("damagedRecord", at);
            damagedAt = at;
        }
        if (sc.has("damageHead")) {  // a byte outside the body: the bornTimestamp's lowest
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            long at = wrote.get(sc.get("damageHead").getAsInt());
            out.addProperty("damagedRecord", at);
            damagedAt = at;
            out.addProperty("damagedByte", Damage.flipBornTimestampByte(root, segmentSize, at));
        }
        if (sc.has("damageMagic")) {  // a record whose magic code is no record's: a check without CRC fails too
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            long at = wrote.get(sc.get("damageMagic").getAsInt());
            out.addProperty("damagedMagicRecord", at);
            out.addProperty("damagedMagicByte", Damage.flipMagicByte(root, segmentSize, at));
        }
        if (sc.has("plantBytes")) {  // bytes written into a record, e.g. a well-formed message inside it
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            JsonObject plant = sc.getAsJsonObject("plantBytes");
            long at = wrote.get(plant.get("put").getAsInt());
            out.addProperty("plantedAt", Damage.plantBytes(root, segmentSize, at, plant.get("add").getAsInt(),
                Base64.getDecoder().decode(plant.get("bytes").getAsString()),
                plant.has("offsetFieldAt") ? plant.get("offsetFieldAt").getAsInt() : -1));
        }
        if (sc.has("damageOffsetField")) {  // a record whose physicalOffset field lies outside its segment
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            long at = wrote.get(sc.get("damageOffsetField").getAsInt());
            out.addProperty("damagedOffsetRecord", at);
            Damage.setOffsetField(root, segmentSize, at, at + 4 * segmentSize);
        }
        if (sc.has("checkpointLogicsPhysicalOffset")) {  // the checkpoint's field: {"set": n} or {"put": i}, "add"
            JsonObject how = sc.getAsJsonObject("checkpointLogicsPhysicalOffset");
            Long base = how.has("set") ? Long.valueOf(how.get("set").getAsLong())
                : how.has("put") ? wrote.get(how.get("put").getAsInt()) : null;
            out.addProperty("checkpointLogicsPhysicalOffset", Damage.setCheckpointLogicsPhysicalOffset(root, base,
                how.has("add") ? how.get("add").getAsLong() : 0));
        }
        if (sc.has("abort") && sc.get("abort").getAsBoolean()) {
            check(new File(root, "abort").createNewFile(), "abort file exists");
        }
        if (sc.has("dledgerCommittedBack")) {  // as a crash before the group committed the last entries
            File cp = new File(root, "dledger-" + props.getProperty("dLegerSelfId", "n0") + "/checkpoint");
            Properties c = new Properties();
            try (java.io.FileInputStream in = new java.io.FileInputStream(cp)) {
                c.load(in);
            }
            long committed = Long.parseLong(c.getProperty("committedIndex").trim())
                - sc.get("dledgerCommittedBack").getAsLong();
            Files.write(cp.toPath(), ("committedIndex=" + committed + "\nendIndex=" + c.getProperty("endIndex").trim()
                + "\n").getBytes(StandardCharsets.ISO_8859_1));
        }
        if (sc.has("zeroQueueTail")) {  // units a queue lacks: its last units zeroed, as if never flushed
            // one {path, units, unitSize} or a list of them (several queues)
            com.google.gson.JsonElement zs = sc.get("zeroQueueTail");
            for (com.google.gson.JsonElement e : zs.isJsonArray() ? zs.getAsJsonArray() : List.of(zs)) {
                JsonObject z = e.getAsJsonObject();
                Damage.zeroQueueTail(new File(root, z.get("path").getAsString()), z.get("units").getAsInt(),
                    z.get("unitSize").getAsInt(), damagedAt);
            }
        }
        if (sc.has("rocksdbIndexLag")) {  // {"put": i, "hole": j}: the index lost its batches after put i and of put j
            JsonObject lag = sc.getAsJsonObject("rocksdbIndexLag");
            long last = wrote.get(lag.get("put").getAsInt());
            long hole = wrote.get(lag.get("hole").getAsInt());
            out.addProperty("rocksdbIndexLastOffsetPy", last);
            out.addProperty("rocksdbIndexHole", hole);
            out.addProperty("rocksdbIndexDeleted", LineAdapter.rocksdbIndexLag(root, last, hole));
        }
        if (sc.has("rocksdbCqCheckpoint")) {  // {"put": i, "add": n}: the RocksDB consume queue's max physical offset
            JsonObject cq = sc.getAsJsonObject("rocksdbCqCheckpoint");
            long at = wrote.get(cq.get("put").getAsInt()) + (cq.has("add") ? cq.get("add").getAsLong() : 0);
            out.addProperty("rocksdbCqCheckpointBefore", LineAdapter.rocksdbCqCheckpoint(root, at));
            out.addProperty("rocksdbCqCheckpoint", at);
        }
        if (sc.has("dropRocksdbStore") && sc.get("dropRocksdbStore").getAsBoolean()) {
            // 5.5.1: a store whose message RocksDB database is lost; the restart creates it empty
            Stores.deleteTree(new File(root, "rocksdbstore"));
        }
        boolean keepQueues = sc.has("keepQueues") && sc.get("keepQueues").getAsBoolean();
        if (sc.has("damageMessage") || sc.has("damageHead") || sc.has("restartDamage") || sc.has("abort")
            || sc.has("keepBefore")) {
            Damage.keepBefore(root, new File(dir, "before"), keepQueues,
                Boolean.parseBoolean(props.getProperty("indexRocksDBEnable", "false").trim())
                || Boolean.parseBoolean(props.getProperty("transRocksDBEnable", "false").trim()));
        }
        if (!keepQueues) {
            Stores.deleteTree(new File(root, "consumequeue"));
            Stores.deleteTree(new File(root, "consumequeue_ext"));
            Stores.deleteTree(new File(root, "index"));
            Stores.deleteTree(new File(root, "batchconsumequeue"));
        }
        if (sc.has("plantFiles")) {  // files the restart finds on disk: into store/ and before/
            plantFiles(sc.getAsJsonObject("plantFiles"), root, new File(dir, "before"));
        }
        if (sc.has("plantUnits")) {  // consume queue files of units naming records the puts wrote: likewise
            plantUnits(sc.getAsJsonObject("plantUnits"), root, new File(dir, "before"), wrote,
                Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog());
        }
        BrokerRole role = props.containsKey("brokerRole")
            ? BrokerRole.valueOf(props.getProperty("brokerRole")) : BrokerRole.ASYNC_MASTER;
        DefaultMessageStore store = Stores.open(props, root, role, topics);
        JsonObject reputDamage = sc.has("reputDamage") ? sc.getAsJsonObject("reputDamage") : null;
        List<org.apache.rocketmq.store.CommitLogDispatcher> dispatchers =
            reputDamage == null ? null : ReputOnly.takeDispatchers(store);
        boolean loaded = store.load();
        if (!loaded && sc.has("loadMayFail")) {  // the restart itself fails: reported, broker.conf still written
            out.addProperty("loadFailed", true);
            try {
                Stores.shutdown(store);
            } catch (RuntimeException ignored) {
                // a store that did not load may not shut down cleanly either
            }
            writeConf(dir, props);
            return;
        }
        check(loaded, "store load failed on restart");
        if (reputDamage != null) {  // the recovery dispatched nothing; now the damage, for the reput alone
            ReputOnly.putDispatchers(store, dispatchers);
            long segmentSize = Stores.storeConfig(props, root, null).getMappedFileSizeCommitLog();
            long at = reputDamage.has("offset") ? reputDamage.get("offset").getAsLong()
                : reputDamage.has("segmentLast")
                ? ReputOnly.lastRecord(root, segmentSize, reputDamage.get("segmentLast").getAsInt())
                : wrote.get(reputDamage.get("message").getAsInt());
            out.addProperty("damagedSize", ReputOnly.damage(root, segmentSize, at,
                reputDamage.get("field").getAsString(), reputDamage.get("value").getAsInt(),
                reputDamage.has("plus") ? reputDamage.get("plus").getAsInt() : 0));
            out.addProperty("damagedRecord", at);
            if (reputDamage.has("also")) {  // more damaged spots, each {"offset" or "message", "field", "value"}
                for (JsonElement e : reputDamage.getAsJsonArray("also")) {
                    JsonObject o = e.getAsJsonObject();
                    long where = o.has("offset") ? o.get("offset").getAsLong() : wrote.get(o.get("message").getAsInt());
                    ReputOnly.damage(root, segmentSize, where, o.get("field").getAsString(),
                        o.get("value").getAsInt(), o.has("plus") ? o.get("plus").getAsInt() : 0);
                }
            }
        }
        // a RocksDB consume queue (storeType=defaultRocksDB) has no queue files to report: its database is
        // read back after the restart instead
        boolean queueFiles = !"defaultRocksDB".equals(props.getProperty("storeType"));
        boolean reportQueues = sc.has("reportQueues") && sc.get("reportQueues").getAsBoolean();
        if ((keepQueues || reportQueues) && queueFiles) {  // after load(): the queues' and the commitlog's recovery, before the reput
            out.add("queuesAfterLoad", QueueStates.of(store));
            out.addProperty("truncateDirtyLogicFilesAt", TruncateCalls.last(store));
        }
        DLedger.beforeStart(store);
        if (reputDamage != null) {
            LineAdapter.quietStoreLog();
        }
        store.start();
        LineAdapter.afterStart(store);
        try {
            if (reputDamage != null) {
                ReputOnly.reputFrom(store, store.getMinPhyOffset());
                boolean[] hung = new boolean[1];
                out.addProperty("reputStoodAt", ReputOnly.awaitQuiet(store, 1_500, 3_000, 60_000, hung));
                out.addProperty("reputHung", hung[0]);
                if (hung[0]) {
                    ReputOnly.releaseHeldPages(store);
                }
            } else {
                DLedger.awaitCommitted(store, 30_000);
                Stores.awaitDispatched(store, 60_000);
            }
            out.addProperty("maxPhyOffset", store.getMaxPhyOffset());
            if ((keepQueues || reportQueues) && queueFiles) {
                out.add("queuesAfterDispatch", QueueStates.of(store));
            }
            DLedger.report(store, out);
            indexNames(store, out);
            if (!batchTopics.isEmpty()) {
                JsonObject maxOffsets = new JsonObject();
                for (Map.Entry<String, java.util.Collection<Integer>> q : LineAdapter.queues(store).entrySet()) {
                    if (batchTopics.contains(q.getKey())) {
                        for (int qid : q.getValue()) {
                            maxOffsets.addProperty(q.getKey() + "/" + qid,
                                LineAdapter.maxOffsetInQueue(store, q.getKey(), qid));
                        }
                    }
                }
                out.add("batchQueueMaxOffsets", maxOffsets);
            }
        } finally {
            Stores.shutdown(store);
        }
        File expected = new File(dir, "expected");
        check(expected.mkdirs(), "cannot create " + expected);
        for (String sub : new String[] {"consumequeue", "index"}) {
            File f = new File(root, sub);
            if (f.exists()) {
                Files.move(f.toPath(), new File(expected, sub).toPath());
            } else {
                check(new File(expected, sub).mkdirs(), "mkdir");
            }
        }
        File ext = new File(root, "consumequeue_ext");  // enableConsumeQueueExt=true: the ext files too
        if (ext.exists()) {
            Files.move(ext.toPath(), new File(expected, "consumequeue_ext").toPath());
        }
        File bcq = new File(root, "batchconsumequeue");
        if (bcq.exists()) {
            Files.move(bcq.toPath(), new File(expected, "batchconsumequeue").toPath());
        }
        File rocks = new File(root, "rocksdbstore");  // 5.5.1 indexRocksDBEnable/transRocksDBEnable: the broker's
        if (rocks.exists() && (Boolean.parseBoolean(props.getProperty("indexRocksDBEnable", "false").trim())
            || Boolean.parseBoolean(props.getProperty("transRocksDBEnable", "false").trim()))) {
            Files.move(rocks.toPath(), new File(expected, "rocksdbstore").toPath());
        }
        File[] rest = root.listFiles();
        if (rest != null) {
            for (File f : rest) {
                if (f.getName().equals("config") && !batchTopics.isEmpty()) {
                    File[] conf = f.listFiles();  // topics.json stays: it says which queues are BatchCQ
                    for (File c : conf == null ? new File[0] : conf) {
                        if (!c.getName().equals("topics.json")) {
                            Stores.deleteTree(c);
                        }
                    }
                } else if (!f.getName().equals("commitlog") && !f.getName().startsWith("dledger")) {
                    Stores.deleteTree(f);
                }
            }
        }
        if (sc.has("restartCopies")) {
            restartCopies(sc, props, dir, role, topics, out);
        }
        writeConf(dir, props);
    }

    static void writeConf(File dir, Properties props) throws IOException {
        StringBuilder conf = new StringBuilder();
        for (String k : new java.util.TreeSet<>(props.stringPropertyNames())) {
            conf.append(k).append('=').append(props.getProperty(k)).append('\n');
        }
        Files.write(new File(dir, "broker.conf").toPath(), conf.toString().getBytes(StandardCharsets.ISO_8859_1));
    }

    /** {@code plantFiles} ({@code {relative path: base64 bytes}}): each file written under {@code root} and, where
     *  {@code before/} was kept, under {@code before} too, after the queue folders were deleted and before the
     *  restart opens the store (a store that holds those files when it starts). */
    static void plantFiles(JsonObject files, File root, File before) throws IOException {
        for (Map.Entry<String, JsonElement> e : files.entrySet()) {
            byte[] data = Base64.getDecoder().decode(e.getValue().getAsString());
            for (File base : before.isDirectory() ? new File[] {root, before} : new File[] {root}) {
                File f = new File(base, e.getKey());
                check(f.getParentFile().isDirectory() || f.getParentFile().mkdirs(), "cannot create " + f.getParent());
                Files.write(f.toPath(), data);
            }
        }
    }

    /** {@code plantUnits} ({@code {relative path: {"fileSize": n, "units": [unit...]}}}): each file of {@code n}
     *  bytes, its 20-byte consume queue units (commitlog offset, size, tags code) first, zeros after, planted as
     *  {@link #plantFiles} does; a unit {@code {"put": k, "tagsCode": t}} names the record of the {@code k}-th put
     *  (its commitlog offset, the size its first four bytes hold), {@code {"offset": o, "size": s, "tagsCode": t}}
     *  is written as given. */
    static void plantUnits(JsonObject files, File root, File before, List<Long> wrote, long segmentSize)
        throws IOException {
        JsonObject planted = new JsonObject();
        for (Map.Entry<String, JsonElement> e : files.entrySet()) {
            JsonObject spec = e.getValue().getAsJsonObject();
            ByteBuffer b = ByteBuffer.allocate(spec.get("fileSize").getAsInt());
            for (JsonElement u : spec.getAsJsonArray("units")) {
                JsonObject o = u.getAsJsonObject();
                long tags = o.has("tagsCode") ? o.get("tagsCode").getAsLong() : 0;
                if (o.has("put")) {
                    long at = wrote.get(o.get("put").getAsInt());
                    try (RandomAccessFile f = new RandomAccessFile(Damage.segmentOf(root, segmentSize, at), "r")) {
                        f.seek(at % segmentSize);
                        b.putLong(at).putInt(f.readInt()).putLong(tags);
                    }
                } else {
                    b.putLong(o.get("offset").getAsLong()).putInt(o.get("size").getAsInt()).putLong(tags);
                }
            }
            planted.addProperty(e.getKey(), Base64.getEncoder().encodeToString(b.array()));
        }
        plantFiles(planted, root, before);
    }

    /** {@code restartCopies} (with {@code abort} or {@code damageMessage}): the restart again on
     *  {@code restartCopies} fresh copies of {@code before/}, each in {@code <dir>/copy-<k>/store}, its
     *  {@code consumequeue/} and {@code index/} moved to {@code <dir>/copy-<k>/expected}; the line adds
     *  {@code copies} (each restart's max physical offset). */
    static void restartCopies(JsonObject sc, Properties props, File dir, BrokerRole role, Set<String> topics,
        JsonObject out) throws Exception {
        JsonArray copies = new JsonArray();
        for (int k = 1; k <= sc.get("restartCopies").getAsInt(); k++) {
            File copy = new File(dir, "copy-" + k);
            File root = new File(copy, "store");
            Damage.copyTree(new File(dir, "before"), root);
            DefaultMessageStore store = Stores.open(props, root, role, topics);
            check(store.load(), "store load failed on the restart of copy " + k);
            DLedger.beforeStart(store);
            store.start();
            LineAdapter.afterStart(store);
            JsonObject one = new JsonObject();
            try {
                DLedger.awaitCommitted(store, 30_000);
                Stores.awaitDispatched(store, 60_000);
                one.addProperty("maxPhyOffset", store.getMaxPhyOffset());
            } finally {
                Stores.shutdown(store);
            }
            for (String sub : new String[] {"consumequeue", "index"}) {
                File f = new File(root, sub);
                File to = new File(new File(copy, "expected"), sub);
                check(to.getParentFile().isDirectory() || to.getParentFile().mkdirs(), "mkdir");
                if (f.exists()) {
                    Files.move(f.toPath(), to.toPath());
                } else {
                    check(to.mkdirs(), "mkdir");
                }
            }
            copies.add(one);
        }
        out.add("copies", copies);
    }

    /** Puts {@code messages} through a store opened with {@code props} (a master), waits until the
     *  reput has dispatched them, and shuts it down; {@code wrote} gets each put's commitlog offset. */
    static void put(Properties props, File root, Set<String> topics, Set<String> batchTopics, JsonArray messages,
        Map<String, Integer> statuses, JsonObject out, List<Long> wrote, boolean crash) throws Exception {
        String clusterName = Stores.brokerConfig(props).getBrokerClusterName();
        DefaultMessageStore store = Stores.open(props, root, BrokerRole.ASYNC_MASTER, topics);
        check(store.load(), "store load failed");
        boolean loopback = DLedger.beforeStart(store);
        store.start();
        LineAdapter.afterStart(store);
        try {
            if (DLedger.commitLog(store) != null) {
                out.addProperty("dledgerLeaderWaitMs", DLedger.awaitLeader(store, 30_000));
                out.addProperty("dledgerLoopbackOnly", loopback);
            }
            java.util.concurrent.locks.Lock puts = WalkStart.putsLock();
            puts.lock();   // a store written again puts alone in this JVM
            try {
                putAll(store, messages, batchTopics, clusterName, statuses, wrote, root);
                Stores.awaitDispatched(store, 60_000);
            } finally {
                puts.unlock();
            }
            Stores.awaitIndexFlushThreads(60_000);
            boolean paused = false;
            for (JsonElement m : messages) {
                paused |= m.getAsJsonObject().has("sleepMs");
            }
            if (paused && DLedger.commitLog(store) != null) {  // the pause is there for the checkpoint's timestamps
                out.addProperty("checkpointLogicsTimestampRewritten", Stores.awaitCheckpointTimestamps(store, 60_000));
            } else if (crash) {   // no pause: the scenario means the walk from the first data file
                int start = WalkStart.firstFile(store, out);
                if (start >= 0) {
                    out.addProperty("crashWalkStartFile", start);
                }
                if (start > 0) {
                    throw new WalkStart.Moved(start);
                }
            }
        } finally {
            Stores.shutdown(store);
        }
    }

    /** The puts of {@link #put}, in order; {@code wrote} gets each one's commitlog offset. */
    static void putAll(DefaultMessageStore store, JsonArray messages, Set<String> batchTopics, String clusterName,
        Map<String, Integer> statuses, List<Long> wrote, File root) throws Exception {
        for (JsonElement m : messages) {
            JsonObject o = m.getAsJsonObject();
            if (o.has("sleepMs")) {
                Thread.sleep(o.get("sleepMs").getAsLong());
                continue;
            }
            if (o.has("pauseMs")) {  // a pause between two puts alone: their store timestamps differ
                Thread.sleep(o.get("pauseMs").getAsLong());
                continue;
            }
            PutMessageResult r;
            if (!o.has("batch")) {
                r = putOne(store, o);
            } else if (batchTopics.contains(o.get("topic").getAsString()) && o.has("uniqKey")) {
                r = LineAdapter.putInnerBatch(store, batch(o), clusterName);
            } else {
                r = store.putMessages(batch(o));
            }
            statuses.merge(r.getPutMessageStatus().name(), 1, Integer::sum);
            wrote.add(r.getAppendMessageResult().getWroteOffset());
            check(r.isOk(), "put failed: " + r.getPutMessageStatus() + " for " + o.get("topic") + diskNote(root));
        }
    }

    /** The index files the reput created, in creation order: two created in one millisecond share a
     *  name and overwrite each other, and then the expected index/ is not what the rule says. */
    @SuppressWarnings("unchecked")
    static void indexNames(DefaultMessageStore store, JsonObject out) throws ReflectiveOperationException {
        Object service = Stores.field(store, DefaultMessageStore.class, "indexService");
        List<Object> files = (List<Object>) Stores.field(service, service.getClass(), "indexFileList");
        JsonArray names = new JsonArray();
        Set<String> seen = new LinkedHashSet<>();
        for (Object f : files) {
            String name = new File((String) f.getClass().getMethod("getFileName").invoke(f)).getName();
            names.add(name);
            seen.add(name);
        }
        out.add("indexFiles", names);
        out.addProperty("indexNamesUnique", seen.size() == files.size());
    }

    static Set<String> topics(JsonArray messages) {
        Set<String> t = new LinkedHashSet<>();
        for (JsonElement m : messages) {
            JsonObject o = m.getAsJsonObject();
            if (o.has("topic")) {
                t.add(o.get("topic").getAsString());
            }
        }
        return t;
    }

    static PutMessageResult putOne(DefaultMessageStore store, JsonObject o) throws IOException {
        MessageExt msg = LineAdapter.newInner();
        common(msg, o);
        msg.setQueueId(o.get("queueId").getAsInt());
        msg.setSysFlag(tranFlag(o));
        msg.setReconsumeTimes(o.has("reconsumeTimes") ? o.get("reconsumeTimes").getAsInt() : 0);
        if (o.has("delayLevel") && o.get("delayLevel").getAsInt() > 0) {
            msg.setDelayTimeLevel(o.get("delayLevel").getAsInt());
        }
        LineAdapter.setPropertiesString(msg, MessageDecoder.messageProperties2String(msg.getProperties()));
        LineAdapter.setTagsCode(msg, msg.getTags());
        LineAdapter.beforePut(store, msg);
        return LineAdapter.put(store, msg);
    }

    /** A batch as the broker's send processor hands it to the store: the client's encoded messages
     *  as the body (MessageDecoder.encodeMessages). */
    static MessageExtBatch batch(JsonObject o) {
        List<Message> list = new ArrayList<>();
        for (JsonElement e : o.getAsJsonArray("batch")) {
            JsonObject m = e.getAsJsonObject();
            Message msg = new Message();
            msg.setTopic(o.get("topic").getAsString());
            msg.setBody(body(m));
            msg.setFlag(m.has("flag") ? m.get("flag").getAsInt() : 0);
            properties(msg, m);
            list.add(msg);
        }
        MessageExtBatch b = new MessageExtBatch();
        common(b, o);  // the batch itself carries no properties, as in SendMessageProcessor
        b.setQueueId(o.get("queueId").getAsInt());
        b.setBody(MessageDecoder.encodeMessages(list));
        return b;
    }

    static void common(MessageExt msg, JsonObject o) {
        msg.setTopic(o.get("topic").getAsString());
        msg.setBody(body(o));
        msg.setFlag(o.has("flag") ? o.get("flag").getAsInt() : 0);
        msg.setBornTimestamp(o.has("bornTimestamp") ? o.get("bornTimestamp").getAsLong()
            : System.currentTimeMillis());
        msg.setBornHost(host(o, "bornHost", "127.0.0.1:40000"));
        msg.setStoreHost(host(o, "storeHost", "127.0.0.1:10911"));
        properties(msg, o);
    }

    static void properties(Message msg, JsonObject o) {
        if (o.has("tags")) {
            msg.setTags(o.get("tags").getAsString());
        }
        if (o.has("keys")) {
            MessageAccessor.putProperty(msg, MessageConst.PROPERTY_KEYS, o.get("keys").getAsString());
        }
        if (o.has("uniqKey")) {
            MessageAccessor.putProperty(msg, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                o.get("uniqKey").getAsString());
        }
        if (o.has("properties")) {
            for (Map.Entry<String, JsonElement> p : o.getAsJsonObject("properties").entrySet()) {
                MessageAccessor.putProperty(msg, p.getKey(), p.getValue().getAsString());
            }
        }
    }

    /** A message's body: {@code body} (base64), or {@code bodySize} bytes of 'x' (a large store without a
     *  scenario file of its size), or none. */
    static byte[] body(JsonObject o) {
        if (o.has("bodySize")) {
            byte[] b = new byte[o.get("bodySize").getAsInt()];
            java.util.Arrays.fill(b, (byte) 'x');
            return b;
        }
        return o.has("body") ? Base64.getDecoder().decode(o.get("body").getAsString()) : new byte[0];
    }

    static int tranFlag(JsonObject o) {
        String t = o.has("tranType") ? o.get("tranType").getAsString() : "none";
        switch (t) {
            case "prepared":
                return MessageSysFlag.TRANSACTION_PREPARED_TYPE;
            case "commit":
                return MessageSysFlag.TRANSACTION_COMMIT_TYPE;
            case "rollback":
                return MessageSysFlag.TRANSACTION_ROLLBACK_TYPE;
            case "none":
                return MessageSysFlag.TRANSACTION_NOT_TYPE;
            default:
                throw new IllegalArgumentException("tranType " + t);
        }
    }

    /** "host:port", IPv6 as "[addr]:port"; IPv6 hosts make the store set the V6 sysFlag bits. */
    static InetSocketAddress host(JsonObject o, String field, String dflt) {
        String s = o.has(field) ? o.get(field).getAsString() : dflt;
        int colon = s.lastIndexOf(':');
        String h = s.substring(0, colon);
        if (h.startsWith("[")) {
            h = h.substring(1, h.length() - 1);
        }
        try {
            return new InetSocketAddress(InetAddress.getByName(h), Integer.parseInt(s.substring(colon + 1)));
        } catch (java.net.UnknownHostException e) {
            throw new IllegalArgumentException(field + " " + s, e);
        }
    }

    /** The store's disk use as the broker and DLedger count it (used over used + usable), when it is past the
     *  75 % where they start refusing or cleaning: a put then fails for the machine's disk, not the scenario. */
    static String diskNote(File root) {
        long used = root.getTotalSpace() - root.getFreeSpace();
        long all = used + root.getUsableSpace();
        long percent = all > 0 ? used * 100 / all : 0;
        return percent < 75 ? "" : " (the disk is " + percent + " % used: past diskMaxUsedSpaceRatio 75, DLedger's"
            + " writes refused past 90 % as OS_PAGE_CACHE_BUSY, the store's past diskSpaceWarningLevelRatio 90:"
            + " free disk, e.g. old pytest temp directories)";
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }
}
