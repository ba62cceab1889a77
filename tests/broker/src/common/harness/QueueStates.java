package harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.File;
import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.store.DefaultMessageStore;

/**
 * Every queue of a store as the store holds it in memory (the {@code keepQueues} knob of {@link Writer}):
 * "topic/queueId" to the queue's class, where its files end ({@code MappedFileQueue.getMaxOffset}: the
 * write position of its last file), the files it maps, {@code getMaxPhysicOffset}, and for a consume
 * queue with ext files where those end and which it maps. Read through reflection, so that one source
 * serves the 4.x and the 5.x lines.
 */
final class QueueStates {
    private QueueStates() {
    }

    static JsonObject of(DefaultMessageStore store) throws ReflectiveOperationException {
        JsonObject out = new JsonObject();
        Map<String, ? extends Map<Integer, ?>> table = store.getConsumeQueueTable();
        for (Map.Entry<String, ? extends Map<Integer, ?>> topic : table.entrySet()) {
            for (Map.Entry<Integer, ?> queue : topic.getValue().entrySet()) {
                Object q = queue.getValue();
                JsonObject s = new JsonObject();
                s.addProperty("type", q.getClass().getSimpleName());
                Object files = field(q, "mappedFileQueue");
                s.addProperty("maxOffset", maxOffset(files));
                s.add("files", names(files));
                s.addProperty("maxPhysicOffset", (Long) q.getClass().getMethod("getMaxPhysicOffset").invoke(q));
                Object ext = field(q, "consumeQueueExt");
                if (ext != null) {
                    s.addProperty("extMaxOffset", maxOffset(field(ext, "mappedFileQueue")));
                    s.add("extFiles", names(field(ext, "mappedFileQueue")));
                }
                out.add(topic.getKey() + "/" + queue.getKey(), s);
            }
        }
        return out;
    }

    private static long maxOffset(Object mappedFileQueue) throws ReflectiveOperationException {
        return (Long) mappedFileQueue.getClass().getMethod("getMaxOffset").invoke(mappedFileQueue);
    }

    /** The names of the files a MappedFileQueue maps ({@code getMappedFiles}), in its order. */
    private static JsonArray names(Object mappedFileQueue) throws ReflectiveOperationException {
        JsonArray out = new JsonArray();
        for (Object f : (List<?>) mappedFileQueue.getClass().getMethod("getMappedFiles").invoke(mappedFileQueue)) {
            out.add(new File((String) f.getClass().getMethod("getFileName").invoke(f)).getName());
        }
        return out;
    }

    /** The field {@code name} declared by the object's class or a superclass (null: none has it). */
    private static Object field(Object owner, String name) throws ReflectiveOperationException {
        for (Class<?> c = owner.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(owner);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            }
        }
        return null;
    }
}
