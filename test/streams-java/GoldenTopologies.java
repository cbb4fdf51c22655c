import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * Runs the golden topologies through Kafka Streams' own TopologyTestDriver on the inputs in
 * packages/streams/test/golden/inputs.json and prints, as JSON, each topology's describe() text
 * and every output record (topic, key, value, timestamp). The same topologies are written in
 * TypeScript in packages/streams/test/golden-topologies.ts; the two must stay in step.
 */
public final class GoldenTopologies {
    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();

    static Topology build(final String name) {
        final StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "wordcount": {
                b.stream("text-input", Consumed.with(S, S))
                    .flatMapValues(v -> v == null ? Collections.<String>emptyList() : Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
                    .groupBy((k, w) -> w, Grouped.with(S, S))
                    .count(Materialized.as("counts-store"))
                    .toStream()
                    .to("wordcount-output", Produced.with(S, L));
                return b.build();
            }
            case "chains": {
                final Map<String, KStream<String, String>> branches = b.stream("events", Consumed.with(S, S))
                    .filter((k, v) -> v.length() > 3)
                    .mapValues(v -> v.toUpperCase(Locale.ROOT))
                    .filterNot((k, v) -> v.startsWith("X"))
                    .map((k, v) -> KeyValue.pair(v.substring(0, 1), k == null ? "none:" + v : k + ":" + v))
                    .peek((k, v) -> { })
                    .split(Named.as("fruit-"))
                    .branch((k, v) -> k.equals("A"), Branched.as("a"))
                    .branch((k, v) -> k.equals("B"), Branched.withConsumer(s -> s.mapValues(v -> v + "!").to("chain-b")))
                    .defaultBranch();
                branches.get("fruit-a").to("chain-a");
                branches.get("fruit-0").to("chain-default");
                return b.build();
            }
            case "aggregate": {
                final KTable<String, String> agg = b.stream("purchases", Consumed.with(S, S))
                    .groupByKey()
                    .aggregate(() -> "init", (k, v, a) -> a + "+" + v,
                        Materialized.<String, String, KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("agg-store").withValueSerde(S));
                agg.toStream().to("agg-output");
                agg.filter((k, v) -> v.length() < 12)
                    .mapValues(v -> String.valueOf(v.length()))
                    .toStream()
                    .to("agg-lengths");
                return b.build();
            }
            case "selectkey-count": {
                b.stream("clicks", Consumed.with(S, S))
                    .selectKey((k, v) -> v)
                    .groupByKey()
                    .count()
                    .toStream()
                    .mapValues(c -> "count=" + c)
                    .to("clicks-per-page");
                return b.build();
            }
            case "merge": {
                final KStream<String, String> left = b.stream("left");
                final KStream<String, String> right = b.stream("right");
                left.merge(right).mapValues(v -> v.toUpperCase(Locale.ROOT)).repartition().to("merged");
                return b.build();
            }
            case "table-groupby": {
                final KTable<String, String> users = b.table("users", Consumed.with(S, S));
                final KTable<String, Long> counts = users
                    .groupBy((user, region) -> KeyValue.pair(region, user), Grouped.with(S, S))
                    .count();
                counts.toStream().to("region-counts", Produced.with(S, L));
                counts.filter((region, n) -> n >= 2).mapValues(n -> "big:" + n).toStream().to("big-regions");
                users.groupBy((user, region) -> KeyValue.pair(region, user), Grouped.with("by-region", S, S))
                    .aggregate(() -> "", (region, user, agg) -> agg + "+" + user, (region, user, agg) -> agg + "-" + user,
                        Materialized.with(S, S))
                    .toStream()
                    .to("region-members");
                return b.build();
            }
            case "processor-api": {
                final Topology t = new Topology();
                t.addSource("pa-source", "pa-input");
                t.addProcessor("pa-counter", CountAndPunctuate::new, "pa-source");
                t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("pa-store"), S, L), "pa-counter");
                t.addSink("pa-sink", "pa-output", new StringSerializer(), new LongSerializer(), "pa-counter");
                return t;
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
    }

    /** Counts per key in a store; every 10 ms of stream time it forwards all counts, every 100 ms of wall-clock time the number of keys. */
    static final class CountAndPunctuate implements Processor<String, String, String, Long> {
        private ProcessorContext<String, Long> ctx;
        private KeyValueStore<String, Long> store;

        @Override
        public void init(final ProcessorContext<String, Long> context) {
            ctx = context;
            store = context.getStateStore("pa-store");
            context.schedule(Duration.ofMillis(10), PunctuationType.STREAM_TIME, ts -> {
                try (KeyValueIterator<String, Long> it = store.all()) {
                    while (it.hasNext()) {
                        final KeyValue<String, Long> kv = it.next();
                        ctx.forward(new Record<>(kv.key, kv.value, ts));
                    }
                }
            });
            context.schedule(Duration.ofMillis(100), PunctuationType.WALL_CLOCK_TIME, ts ->
                ctx.forward(new Record<>("wall", store.approximateNumEntries(), ts)));
        }

        @Override
        public void process(final Record<String, String> r) {
            final Long old = store.get(r.key());
            store.put(r.key(), old == null ? 1L : old + 1);
            if ("emit".equals(r.value())) {
                ctx.forward(r.withValue(-1L));
            }
        }
    }

    public static void main(final String[] args) throws Exception {
        printAll(args[0], GoldenTopologies::build);
    }

    /** Runs every topology named in the inputs file and prints the golden JSON (GoldenDriver); JoinTopologies.java uses it too. */
    static void printAll(final String inputsFile, final java.util.function.Function<String, Topology> builder) throws Exception {
        GoldenDriver.printAll(inputsFile, "golden-app", false, builder);
    }
}
