import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The join golden topologies (issue 15): each join kind run through Kafka Streams' own
 * TopologyTestDriver on packages/streams/test/golden/joins-inputs.json, printed as
 * GoldenTopologies.java prints its own (whose run loop this reuses). The TypeScript twins are in
 * packages/streams/test/join-topologies.ts.
 */
public final class JoinTopologies {
    static final Serde<String> S = Serdes.String();

    static String j(final String l, final String r) {
        return l + "+" + r;
    }

    static Topology build(final String name) {
        final StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "stream-table": {
                final KTable<String, String> customers = b.table("customers", Consumed.with(S, S));
                final KStream<String, String> orders = b.stream("orders", Consumed.with(S, S));
                orders.join(customers, JoinTopologies::j).to("st-inner");
                orders.leftJoin(customers, JoinTopologies::j).to("st-left");
                return b.build();
            }
            case "stream-table-rekey": {
                final KTable<String, String> customers = b.table("customers", Consumed.with(S, S), Materialized.as("customer-store"));
                final KStream<String, String> clicks = b.stream("clicks", Consumed.with(S, S)).selectKey((k, v) -> v.split(":")[0]);
                clicks.join(customers, (k, v, c) -> k + "=" + v + "/" + c, Joined.with(S, S, S).withName("clicks-customers")).to("rekey-inner");
                clicks.mapValues(v -> v.toUpperCase()).leftJoin(customers, JoinTopologies::j).to("rekey-left");
                clicks.leftJoin(customers, JoinTopologies::j).to("rekey-left2");
                clicks.join(customers, JoinTopologies::j).to("rekey-inner2");
                return b.build();
            }
            case "table-table": {
                final KTable<String, String> left = b.table("left-t", Consumed.with(S, S));
                final KTable<String, String> right = b.table("right-t", Consumed.with(S, S));
                left.join(right, JoinTopologies::j).toStream().to("tt-inner");
                left.leftJoin(right, JoinTopologies::j).toStream().to("tt-left");
                left.outerJoin(right, JoinTopologies::j).toStream().to("tt-outer");
                return b.build();
            }
            case "table-table-old-values": {
                final KTable<String, String> left = b.table("left-t", Consumed.with(S, S));
                final KTable<String, String> right = b.table("right-t", Consumed.with(S, S), Materialized.as("right-store"));
                left.leftJoin(right, JoinTopologies::j)
                    .groupBy((k, v) -> KeyValue.pair(v.substring(v.indexOf('+') + 1), k), Grouped.with(S, S))
                    .count()
                    .toStream()
                    .to("tt-by-right", Produced.with(S, Serdes.Long()));
                left.outerJoin(right, JoinTopologies::j, Materialized.as("outer-store"))
                    .filter((k, v) -> !v.startsWith("null"))
                    .toStream()
                    .to("tt-outer-filtered");
                return b.build();
            }
            case "global": {
                final GlobalKTable<String, String> products = b.globalTable("products", Consumed.with(S, S));
                final KStream<String, String> sales = b.stream("sales", Consumed.with(S, S));
                sales.join(products, (k, v) -> v == null ? null : v.split(":")[0], JoinTopologies::j).to("gl-inner");
                sales.leftJoin(products, (k, v) -> v == null ? null : v.split(":")[0], (k, v, p) -> k + ":" + v + "@" + p).to("gl-left");
                return b.build();
            }
            case "fk-inner": {
                final KTable<String, String> orders = b.table("fk-orders", Consumed.with(S, S));
                final KTable<String, String> products = b.table("fk-products", Consumed.with(S, S));
                orders.join(products, v -> v.split(":")[0], JoinTopologies::j).toStream().to("fk-inner");
                return b.build();
            }
            case "fk-left": {
                final KTable<String, String> orders = b.table("fk-orders", Consumed.with(S, S));
                final KTable<String, String> products = b.table("fk-products", Consumed.with(S, S));
                orders.leftJoin(products, v -> v.split(":")[0], JoinTopologies::j, Materialized.as("fk-left-store")).toStream().to("fk-left");
                return b.build();
            }
            case "named": {
                final KTable<String, String> orders = b.table("fk-orders", Consumed.with(S, S));
                final KTable<String, String> products = b.table("fk-products", Consumed.with(S, S));
                orders.leftJoin(products, v -> v.split(":")[0], JoinTopologies::j, TableJoined.as("order-product")).toStream().to("named-fk");
                orders.outerJoin(products, JoinTopologies::j, Named.as("tt")).toStream().to("named-tt");
                final GlobalKTable<String, String> global = b.globalTable("global-products", Consumed.with(S, S), Materialized.as("global-store"));
                b.stream("named-sales", Consumed.with(S, S)).join(global, (k, v) -> v, JoinTopologies::j, Named.as("sale-product")).to("named-gl");
                return b.build();
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
    }

    public static void main(final String[] args) throws Exception {
        GoldenTopologies.printAll(args[0], JoinTopologies::build);
    }
}
