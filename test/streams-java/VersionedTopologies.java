import java.time.Duration;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.ContextualProcessor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.VersionedKeyValueStore;
import org.apache.kafka.streams.state.VersionedRecord;

/**
 * Versioned key-value stores (KIP-889), their DSL semantics (KIP-914) and stream-table joins with
 * a grace period (KIP-923) through Kafka Streams' own TopologyTestDriver (caching off), on
 * packages/streams/test/golden/versioned-inputs.json; prints what GoldenDriver prints. The
 * TypeScript twins are in packages/streams/test/versioned-topologies.ts; keep the two in step.
 * Store calls are driven by records: an "ops" value names one call, its result is the output value.
 */
public final class VersionedTopologies {
    static final Serde<String> S = Serdes.String();

    static Duration ms(final long n) {
        return Duration.ofMillis(n);
    }

    static String show(final VersionedRecord<String> r) {
        if (r == null) {
            return "null";
        }
        return r.value() + "@" + r.timestamp() + "/" + r.validTo().map(String::valueOf).orElse("-");
    }

    /** put:value:ts, tomb:ts, del:ts, get, get:ts against one versioned store. */
    static final class StoreOps extends ContextualProcessor<String, String, String, String> {
        private final String storeName;
        private VersionedKeyValueStore<String, String> store;

        StoreOps(final String storeName) {
            this.storeName = storeName;
        }

        @Override
        public void init(final org.apache.kafka.streams.processor.api.ProcessorContext<String, String> context) {
            super.init(context);
            store = context.getStateStore(storeName);
        }

        @Override
        public void process(final Record<String, String> r) {
            final String[] op = r.value().split(":");
            final String out;
            switch (op[0]) {
                case "put":
                    out = String.valueOf(store.put(r.key(), op[1], Long.parseLong(op[2])));
                    break;
                case "tomb":
                    out = String.valueOf(store.put(r.key(), null, Long.parseLong(op[1])));
                    break;
                case "del":
                    out = show(store.delete(r.key(), Long.parseLong(op[1])));
                    break;
                default:
                    out = op.length == 1 ? show(store.get(r.key())) : show(store.get(r.key(), Long.parseLong(op[1])));
            }
            context().forward(r.withValue(r.value() + "=" + out));
        }
    }

    static Topology build(final String name) {
        final StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "store-api": {
                b.addStateStore(Stores.versionedKeyValueStoreBuilder(Stores.persistentVersionedKeyValueStore("ver", ms(10)), S, S));
                b.stream("ops", Consumed.with(S, S)).process(() -> new StoreOps("ver"), "ver").to("ops-out", Produced.with(S, S));
                return b.build();
            }
            case "table": {
                final KTable<String, String> prices = b.table("prices", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("prices-store", ms(20))));
                prices.toStream().to("prices-out", Produced.with(S, S));
                prices.groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(S, S)).count().toStream()
                    .mapValues(v -> String.valueOf(v)).to("by-value-out", Produced.with(S, S));
                final KTable<String, String> rates = b.table("rates", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("rates-store", ms(20))));
                prices.join(rates, (p, q) -> p + "*" + q).toStream().to("tt-out", Produced.with(S, S));
                prices.filter((k, v) -> !v.startsWith("x"), Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("cheap-store", ms(5))))
                    .toStream().to("filtered-out", Produced.with(S, S));
                b.stream("q", Consumed.with(S, S)).process(() -> new StoreOps("prices-store"), "prices-store").to("q-out", Produced.with(S, S));
                return b.build();
            }
            case "stream-table": {
                final KTable<String, String> customers = b.table("customers", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("customers-store", ms(30))));
                final KStream<String, String> orders = b.stream("orders", Consumed.with(S, S));
                orders.join(customers, (o, c) -> o + "@" + c).to("inner-out", Produced.with(S, S));
                orders.leftJoin(customers, (o, c) -> o + "@" + c).to("left-out", Produced.with(S, S));
                return b.build();
            }
            case "grace": {
                final KTable<String, String> customers = b.table("customers", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("cust-v", ms(30))));
                final KStream<String, String> orders = b.stream("orders", Consumed.with(S, S));
                orders.join(customers, (o, c) -> o + "@" + c, Joined.with(S, S, S).withGracePeriod(ms(5))).to("grace-inner-out", Produced.with(S, S));
                orders.leftJoin(customers, (o, c) -> o + "@" + c, Joined.<String, String, String>as("late-join").withGracePeriod(ms(0)))
                    .to("grace-left-out", Produced.with(S, S));
                orders.selectKey((k, v) -> v.substring(0, 1)).leftJoin(customers, (o, c) -> o + "@" + c,
                    Joined.<String, String, String>as("rekeyed").withKeySerde(S).withValueSerde(S).withGracePeriod(ms(10))).to("rekeyed-out", Produced.with(S, S));
                return b.build();
            }
            case "aggregates": {
                final KStream<String, String> events = b.stream("events", Consumed.with(S, S));
                events.groupByKey().aggregate(() -> "", (k, v, agg) -> agg + v,
                        Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("agg-v", ms(10))).withValueSerde(S))
                    .toStream().to("agg-out", Produced.with(S, S));
                b.stream("aq", Consumed.with(S, S)).process(() -> new StoreOps("agg-v"), "agg-v").to("aq-out", Produced.with(S, S));
                b.table("owners", Consumed.with(S, S)).groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(S, S))
                    .aggregate(() -> "", (k, v, agg) -> agg + "+" + v, (k, v, agg) -> agg + "-" + v,
                        Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("owned-v", ms(10))).withValueSerde(S))
                    .toStream().to("owned-out", Produced.with(S, S));
                return b.build();
            }
            case "fk": {
                final KTable<String, String> orders = b.table("fk-orders", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("fk-orders-v", ms(20))));
                final KTable<String, String> products = b.table("fk-products", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("fk-products-v", ms(20))));
                orders.join(products, v -> v.split("\\|")[0], (o, p) -> o + "/" + p).toStream().to("fk-out", Produced.with(S, S));
                orders.leftJoin(products, v -> v.split("\\|")[0], (o, p) -> o + "/" + p).toStream().to("fk-left-out", Produced.with(S, S));
                return b.build();
            }
            case "through-mapvalues": {
                final KTable<String, String> upper = b.table("names", Consumed.with(S, S),
                    Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("names-v", ms(30)))).mapValues(v -> v.toUpperCase());
                final KStream<String, String> visits = b.stream("visits", Consumed.with(S, S));
                visits.join(upper, (v, n) -> v + ":" + n).to("as-of-out", Produced.with(S, S));
                visits.leftJoin(upper, (v, n) -> v + ":" + n, Joined.with(S, S, S).withGracePeriod(ms(4))).to("mapped-grace-out", Produced.with(S, S));
                return b.build();
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
    }

    public static void main(final String[] args) throws Exception {
        GoldenDriver.printAll(args[0], "versioned-app", true, VersionedTopologies::build);
    }
}
