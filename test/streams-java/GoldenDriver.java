import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.File;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Function;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The run loop every golden program shares (GoldenTopologies, JoinTopologies, WindowTopologies,
 * MoreWindowTopologies): Kafka Streams' own TopologyTestDriver, caching off, fed each spec's
 * steps; prints, as JSON, each topology's describe() text and every output record. An output
 * spec is either a value type ("string" / "long", string keys) or {key: string|hex, value};
 * hex keys are the bytes as written (windowed serdes). Optional extras, per program: the task's
 * dropped-records-total, and the final contents of the window and session stores a spec names.
 */
final class GoldenDriver {
    private GoldenDriver() {}

    static void printAll(final String inputsFile, final String applicationId, final boolean withDropped,
                         final Function<String, Topology> builder) throws Exception {
        final ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        final JsonNode inputs = json.readTree(new File(inputsFile));
        final Map<String, Object> out = new LinkedHashMap<>();
        out.put("kafkaStreamsVersion", AppInfoParser.getVersion());
        final Map<String, Object> topologies = new LinkedHashMap<>();
        final Iterator<String> names = inputs.fieldNames();
        while (names.hasNext()) {
            final String name = names.next();
            topologies.put(name, run(builder.apply(name), inputs.get(name), applicationId, withDropped));
        }
        out.put("topologies", topologies);
        System.out.println(json.writeValueAsString(out));
    }

    static String hex(final byte[] b) {
        final StringBuilder sb = new StringBuilder();
        for (final byte x : b) {
            sb.append(String.format("%02x", x));
        }
        return sb.toString();
    }

    static String at(final Windowed<?> w) {
        return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }

    static Map<String, Object> run(final Topology topology, final JsonNode spec, final String applicationId, final boolean withDropped) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, spec.has("cacheMaxBytes") ? spec.get("cacheMaxBytes").asLong() : 0L);
        final Map<String, Object> result = new LinkedHashMap<>();
        result.put("describe", topology.describe().toString());
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, Instant.ofEpochMilli(1_000_000L))) {
            final Map<String, TestInputTopic<String, String>> in = new LinkedHashMap<>();
            for (final JsonNode step : spec.get("steps")) {
                if (step.has("advanceWallClockMs")) {
                    driver.advanceWallClockTime(Duration.ofMillis(step.get("advanceWallClockMs").asLong()));
                    continue;
                }
                final String topic = step.get("topic").asText();
                final TestInputTopic<String, String> t = in.computeIfAbsent(topic, x ->
                    driver.createInputTopic(x, new StringSerializer(), new StringSerializer()));
                final String key = step.get("key").isNull() ? null : step.get("key").asText();
                final String value = step.get("value").isNull() ? null : step.get("value").asText();
                t.pipeInput(key, value, step.get("timestamp").asLong());
            }
            final Map<String, Object> outputs = new LinkedHashMap<>();
            final Iterator<Map.Entry<String, JsonNode>> topics = spec.get("outputs").fields();
            while (topics.hasNext()) {
                final Map.Entry<String, JsonNode> e = topics.next();
                final JsonNode type = e.getValue();
                final boolean hexKey = type.isObject() && type.get("key").asText().equals("hex");
                final String valueType = type.isObject() ? type.get("value").asText() : type.asText();
                final Deserializer<?> kd = hexKey ? new ByteArrayDeserializer() : new StringDeserializer();
                final Deserializer<?> vd = valueType.equals("long") ? new LongDeserializer() : new StringDeserializer();
                final TestOutputTopic<?, ?> t = driver.createOutputTopic(e.getKey(), kd, vd);
                final List<Object> records = new ArrayList<>();
                for (final TestRecord<?, ?> r : t.readRecordsToList()) {
                    final Map<String, Object> rec = new LinkedHashMap<>();
                    rec.put("key", r.key() == null ? null : hexKey ? hex((byte[]) r.key()) : r.key());
                    rec.put("value", r.value());
                    rec.put("timestamp", r.timestamp());
                    records.add(rec);
                }
                outputs.put(e.getKey(), records);
            }
            result.put("outputs", outputs);
            if (withDropped) {
                double dropped = 0;
                for (final Map.Entry<MetricName, ? extends Metric> m : driver.metrics().entrySet()) {
                    if (m.getKey().name().equals("dropped-records-total") && m.getKey().group().equals("stream-task-metrics")) {
                        dropped += ((Number) m.getValue().metricValue()).doubleValue();
                    }
                }
                result.put("droppedRecords", (long) dropped);
            }
            if (spec.has("windowStores")) {
                result.put("windowStores", windowStores(driver, spec.get("windowStores")));
            }
            if (spec.has("sessionStores")) {
                result.put("sessionStores", sessionStores(driver, spec.get("sessionStores")));
            }
        }
        return result;
    }

    /** Each named timestamped window store's entries as "key@start/end=value@timestamp", sorted (stores differ in scan order). */
    private static Map<String, Object> windowStores(final TopologyTestDriver driver, final JsonNode names) {
        final Map<String, Object> out = new LinkedHashMap<>();
        for (final JsonNode n : names) {
            final WindowStore<String, ValueAndTimestamp<Object>> store = driver.getTimestampedWindowStore(n.asText());
            final List<String> entries = new ArrayList<>();
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Object>> it = store.all()) {
                while (it.hasNext()) {
                    final KeyValue<Windowed<String>, ValueAndTimestamp<Object>> kv = it.next();
                    entries.add(at(kv.key) + "=" + kv.value.value() + "@" + kv.value.timestamp());
                }
            }
            entries.sort(Comparator.naturalOrder());
            out.put(n.asText(), entries);
        }
        return out;
    }

    /** Each named session store's sessions as "key@start/end=value", sorted. */
    private static Map<String, Object> sessionStores(final TopologyTestDriver driver, final JsonNode names) {
        final Map<String, Object> out = new LinkedHashMap<>();
        for (final JsonNode n : names) {
            final SessionStore<String, Object> store = driver.getSessionStore(n.asText());
            final List<String> entries = new ArrayList<>();
            try (KeyValueIterator<Windowed<String>, Object> it = store.findSessions(null, null, 0L, Long.MAX_VALUE)) {
                while (it.hasNext()) {
                    final KeyValue<Windowed<String>, Object> kv = it.next();
                    entries.add(at(kv.key) + "=" + kv.value);
                }
            }
            entries.sort(Comparator.naturalOrder());
            out.put(n.asText(), entries);
        }
        return out;
    }
}
