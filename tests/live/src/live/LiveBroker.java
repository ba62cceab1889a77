package live;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Random;

import org.apache.rocketmq.broker.BrokerController;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.namesrv.NamesrvConfig;
import org.apache.rocketmq.namesrv.NamesrvController;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyServerConfig;
import org.apache.rocketmq.store.MessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * A name server, a broker and real clients in one JVM, on the loopback interface; the broker's store
 * is what the Python test then rebuilds.
 *
 * <p>Arguments: {@code broker.conf} (the store settings, written by the test and given to the rebuild
 * too), the store root, the number of ordinary messages, a seed, a time limit in seconds.
 *
 * <p>What goes through the broker: ordinary messages with tags and keys (hash-colliding, non-ASCII,
 * long), delayed messages (the schedule topic and its redelivery), a batch, transactions committed,
 * rolled back and left unknown for the broker's check-back, and a consumer group that fails some
 * messages until they go to its retry topic and then to its dead-letter queue. The broker is shut
 * down cleanly at the end, as an operator would before deleting consume queues and index files.
 * Progress and the final counts go to stdout as {@code key=value} lines.
 */
public final class LiveBroker {
    static final String TOPIC = "LiveTopic";
    static final String TX_TOPIC = "LiveTxTopic";
    static final String GROUP = "LiveGroup";
    static final int NAMESRV_PORT = 19876;
    static final int BROKER_PORT = 20911;
    static final int MAX_RECONSUME = 2;

    private LiveBroker() {
    }

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) {
            e.printStackTrace();
            System.out.flush();
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String[] args) throws Exception {
        // what NamesrvStartup and BrokerStartup set first: without it requests carry protocol version 0
        // and the name server reads a registration the old way, without the broker's topics
        System.setProperty("rocketmq.remoting.version", Integer.toString(MQVersion.CURRENT_VERSION));
        // the clients' route polls and rebalances every 20-30 s by default: the retry topic, created by the
        // first message sent back, would wait that long before the consumer reads it
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
        Properties conf = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            conf.load(in);
        }
        String root = args[1];
        int messages = Integer.parseInt(args[2]);
        Random random = new Random(Long.parseLong(args[3]));
        long deadline = System.currentTimeMillis() + 1000L * Integer.parseInt(args[4]);

        NamesrvController namesrv = startNamesrv(root);
        BrokerController broker = startBroker(conf, root);
        current = broker;
        int failing;
        int txCommitted;
        try {
            waitFor("routes registered", deadline,
                () -> namesrv.getRouteInfoManager().pickupTopicRouteData(TOPIC) != null
                    && namesrv.getRouteInfoManager().pickupTopicRouteData(TX_TOPIC) != null);
            failing = produce(broker, messages, random);
            txCommitted = transactions(random);
            consume(broker, failing, deadline);
            waitFor("transactions resolved", deadline,
                () -> count(broker.getMessageStore(), TX_TOPIC) >= txCommitted);
            waitFor("delayed messages delivered", deadline,
                () -> count(broker.getMessageStore(), TOPIC) >= expectedInTopic);
            Thread.sleep(1500);  // let the last redeliveries and checks settle before stopping
        } catch (Exception e) {
            e.printStackTrace();
            broker.shutdown();
            namesrv.shutdown();
            throw e;
        }
        broker.shutdown();
        namesrv.shutdown();
        System.out.println("failing=" + failing);
        System.out.println("tx_committed=" + txCommitted);
        System.out.println("done=1");
        System.out.flush();
    }

    static int expectedInTopic;

    static NamesrvController startNamesrv(String root) throws Exception {
        NamesrvConfig config = new NamesrvConfig();
        config.setKvConfigPath(root + "/namesrv/kvConfig.json");
        config.setConfigStorePath(root + "/namesrv/namesrv.properties");
        NettyServerConfig server = new NettyServerConfig();
        server.setListenPort(NAMESRV_PORT);
        NamesrvController controller = new NamesrvController(config, server);
        if (!controller.initialize()) {
            throw new IllegalStateException("the name server did not initialize");
        }
        controller.start();
        return controller;
    }

    static BrokerController startBroker(Properties conf, String root) throws Exception {
        BrokerConfig brokerConfig = new BrokerConfig();
        MessageStoreConfig storeConfig = new MessageStoreConfig();
        NettyServerConfig server = new NettyServerConfig();
        MixAll.properties2Object(conf, brokerConfig);
        MixAll.properties2Object(conf, storeConfig);
        brokerConfig.setNamesrvAddr("127.0.0.1:" + NAMESRV_PORT);
        brokerConfig.setBrokerIP1("127.0.0.1");
        brokerConfig.setBrokerName("live-broker");
        storeConfig.setStorePathRootDir(root + "/store");
        storeConfig.setStorePathCommitLog(root + "/store/commitlog");
        server.setListenPort(BROKER_PORT);
        BrokerController controller = new BrokerController(brokerConfig, server, new NettyClientConfig(), storeConfig);
        if (!controller.initialize()) {
            throw new IllegalStateException("the broker did not initialize");
        }
        controller.start();
        for (String topic : new String[] {TOPIC, TX_TOPIC}) {
            TopicConfig topicConfig = new TopicConfig(topic, 4, 4, 6);
            controller.getTopicConfigManager().updateTopicConfig(topicConfig);
        }
        controller.registerBrokerAll(true, false, true);
        return controller;
    }

    static String key(Random random, int i) {
        switch (random.nextInt(6)) {
            case 0: return random.nextBoolean() ? "Aa" : "BB";  // equal String.hashCode
            case 1: return "订单-" + i;
            case 2: return "k" + i + " k" + (i % 7) + "  odd";  // several tokens, a double space
            case 3: return "long-" + "x".repeat(300 + random.nextInt(700));
            default: return "key-" + i;
        }
    }

    static Message message(String topic, Random random, int i, String tag) {
        byte[] body = new byte[1 + random.nextInt(600)];  // a client refuses an empty body
        random.nextBytes(body);
        return new Message(topic, tag, key(random, i), body);
    }

    /** Ordinary, delayed and batched messages; returns how many carry the tag the consumer fails. */
    static int produce(BrokerController broker, int messages, Random random) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("LiveProducer");
        producer.setNamesrvAddr("127.0.0.1:" + NAMESRV_PORT);
        producer.setSendMsgTimeout(10000);
        producer.start();
        int failing = 0;
        int inTopic = 0;
        try {
            for (int i = 0; i < messages; i++) {
                String tag = i % 10 == 3 ? "FAIL" : (random.nextBoolean() ? "TagA" : "标签B");
                Message msg = message(TOPIC, random, i, tag);
                if (i % 9 == 4) {
                    msg.setDelayTimeLevel(1 + random.nextInt(3));
                }
                check(producer.send(msg));
                inTopic++;
                if ("FAIL".equals(tag)) {
                    failing++;
                }
            }
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                batch.add(message(TOPIC, random, messages + i, "TagBatch"));
            }
            check(producer.send(batch));
            inTopic += batch.size();
        } finally {
            producer.shutdown();
        }
        expectedInTopic = inTopic;
        System.out.println("produced=" + inTopic);
        return failing;
    }

    static void check(SendResult result) {
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send: " + result);
        }
    }

    /** Prepared messages resolved at once (commit, rollback) and by the broker's check-back (unknown). */
    static int transactions(Random random) throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer("LiveTxProducer");
        producer.setNamesrvAddr("127.0.0.1:" + NAMESRV_PORT);
        producer.setSendMsgTimeout(10000);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                int kind = (Integer) arg;
                if (kind == 0) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
                return kind == 1 ? LocalTransactionState.ROLLBACK_MESSAGE : LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                boolean commit = msg.getKeys() != null && msg.getKeys().hashCode() % 2 == 0;
                return commit ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            }
        });
        producer.start();
        int expected = 0;
        try {
            for (int i = 0; i < 30; i++) {
                int kind = i % 3;
                Message msg = message(TX_TOPIC, random, 100000 + i, "TagTx");
                msg.setKeys("tx-" + i);
                producer.sendMessageInTransaction(msg, kind);
                if (kind == 0 || (kind == 2 && ("tx-" + i).hashCode() % 2 == 0)) {
                    expected++;
                }
            }
        } finally {
            // the check-back needs the producer: keep it until the broker has resolved every prepared message
            Runtime.getRuntime().addShutdownHook(new Thread(producer::shutdown));
        }
        System.out.println("tx_expected=" + expected);
        return expected;
    }

    /** A consumer group that fails the "FAIL" messages until they reach its dead-letter queue. */
    static void consume(BrokerController broker, int failing, long deadline) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(GROUP);
        consumer.setNamesrvAddr("127.0.0.1:" + NAMESRV_PORT);
        consumer.setMaxReconsumeTimes(MAX_RECONSUME);
        consumer.setPollNameServerInterval(1000);
        consumer.subscribe(TOPIC, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                if ("FAIL".equals(msg.getTags())) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        try {
            waitFor("dead letters", deadline,
                () -> count(broker.getMessageStore(), MixAll.getDLQTopic(GROUP)) >= failing);
        } finally {
            consumer.shutdown();
        }
    }

    static BrokerController current;

    /** Messages in a topic's queues, for the queues its topic config has (none asked of others). */
    static long count(MessageStore store, String topic) throws Exception {
        TopicConfig config = current.getTopicConfigManager().selectTopicConfig(topic);
        if (config == null) {
            return 0;
        }
        long total = 0;
        for (int queue = 0; queue < config.getWriteQueueNums(); queue++) {
            long max = store.getMaxOffsetInQueue(topic, queue);
            total += Math.max(0, max - store.getMinOffsetInQueue(topic, queue));
        }
        return total;
    }

    interface Condition {
        boolean holds() throws Exception;
    }

    static void waitFor(String what, long deadline, Condition condition) throws Exception {
        while (!condition.holds()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(200);
        }
        System.out.println("reached=" + what.replace(' ', '_'));
    }
}
