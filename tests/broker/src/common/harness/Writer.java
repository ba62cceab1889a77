package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
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
 * <p>Usage: {@code Writer SCENARIOS.json} (a JSON array). For each scenario, in its {@code dir}:
 * the messages go through {@code DefaultMessageStore.putMessage/putMessages} of a started master
 * store; after a clean shutdown {@code consumequeue/} and {@code index/} are deleted and the store is
 * started again with the scenario's settings, so that the reput thread rebuilds them from the
 * commitlog; once it has dispatched to the commitlog's max offset the store is shut down and those
 * files are moved to {@code expected/}. {@code store/} then holds only {@code commitlog/}, and
 * {@code broker.conf} the settings. One JSON line per scenario goes to stdout.
 */
public final class Writer {
    private Writer() {
    }

    public static void main(String[] args) throws Exception {
        JsonArray scenarios = JsonParser.parseString(
            new String(Files.readAllBytes(new File(args[0]).toPath()), StandardCharsets.UTF_8)).getAsJsonArray();
        int failed = 0;
        for (JsonElement e : scenarios) {
            JsonObject sc = e.getAsJsonObject();
            JsonObject out = new JsonObject();
            out.addProperty("name", sc.get("name").getAsString());
            try {
                write(sc, out);
                out.addProperty("ok", true);
            } catch (Exception ex) {
                failed++;
                out.addProperty("ok", false);
                out.addProperty("error", ex.toString());
            }
            System.out.println(out);
            System.out.flush();
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    static void write(JsonObject sc, JsonObject out) throws Exception {
        File dir = new File(sc.get("dir").getAsString());
        File root = new File(dir, "store");
        Stores.deleteTree(dir);
        Properties props = Stores.properties(sc.getAsJsonObject("config"));
        JsonArray messages = sc.getAsJsonArray("messages");
        Set<String> topics = topics(messages);

        DefaultMessageStore store = Stores.open(props, root, BrokerRole.ASYNC_MASTER, topics);
        check(store.load(), "store load failed");
        store.start();
        LineAdapter.afterStart(store);
        Map<String, Integer> statuses = new TreeMap<>();
        try {
            for (JsonElement m : messages) {
                JsonObject o = m.getAsJsonObject();
                if (o.has("sleepMs")) {
                    Thread.sleep(o.get("sleepMs").getAsLong());
                    continue;
                }
                PutMessageResult r = o.has("batch") ? store.putMessages(batch(o)) : putOne(store, o);
                statuses.merge(r.getPutMessageStatus().name(), 1, Integer::sum);
                check(r.isOk(), "put failed: " + r.getPutMessageStatus() + " for " + o.get("topic"));
            }
            Stores.awaitDispatched(store, 60_000);
        } finally {
            store.shutdown();
        }
        JsonObject st = new JsonObject();
        statuses.forEach(st::addProperty);
        out.add("putStatuses", st);

        // the broker's own rebuild: consumequeue/ and index/ gone, the store started again
        Stores.deleteTree(new File(root, "consumequeue"));
        Stores.deleteTree(new File(root, "index"));
        BrokerRole role = props.containsKey("brokerRole")
            ? BrokerRole.valueOf(props.getProperty("brokerRole")) : BrokerRole.ASYNC_MASTER;
        store = Stores.open(props, root, role, topics);
        check(store.load(), "store load failed on restart");
        store.start();
        LineAdapter.afterStart(store);
        try {
            Stores.awaitDispatched(store, 60_000);
            out.addProperty("maxPhyOffset", store.getMaxPhyOffset());
            indexNames(store, out);
        } finally {
            store.shutdown();
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
        File[] rest = root.listFiles();
        if (rest != null) {
            for (File f : rest) {
                if (!f.getName().equals("commitlog")) {
                    Stores.deleteTree(f);
                }
            }
        }
        StringBuilder conf = new StringBuilder();
        for (String k : new java.util.TreeSet<>(props.stringPropertyNames())) {
            conf.append(k).append('=').append(props.getProperty(k)).append('\n');
        }
        Files.write(new File(dir, "broker.conf").toPath(), conf.toString().getBytes(StandardCharsets.ISO_8859_1));
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

    static byte[] body(JsonObject o) {
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

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }
}
