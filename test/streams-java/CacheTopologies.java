import java.time.Duration;
import java.util.Arrays;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;

/**
 * Record caches ON (statestore.cache.max.bytes > 0, Materialized's default caching) through Kafka
 * Streams' own TopologyTestDriver, on packages/streams/test/golden/cache-inputs.json. A spec name
 * is `<topology>@<cache bytes>`; the spec's cacheMaxBytes is the driver's cache size. The
 * TypeScript twins are in packages/streams/test/cache-topologies.ts; keep the two in step.
 * Values are space-separated words where one input record should make several updates (a cache
 * dedupes within one commit, and the driver commits after every record).
 */
public final class CacheTopologies {
    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();

    static Duration ms(final long n) {
        return Duration.ofMillis(n);
    }

    static String at(final Windowed<String> w) {
        return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }

    static KGroupedStream<String, String> words(final StreamsBuilder b) {
        return b.<String, String>stream("words").flatMapValues(v -> Arrays.asList(v.split(" "))).groupByKey();
    }

    static Topology build(final String spec) {
        final String name = spec.substring(0, spec.indexOf('@'));
        final StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "table-source":
                b.<String, String>table("in", Materialized.as("t")).toStream().to("out");
                break;
            case "table-source-groupby":
                b.<String, String>table("in", Materialized.as("t"))
                    .groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(S, S))
                    .count(Materialized.as("c"))
                    .toStream().to("out", Produced.with(S, L));
                break;
            case "table-table-join": {
                final KTable<String, String> left = b.table("left", Materialized.as("l"));
                final KTable<String, String> right = b.table("right", Materialized.as("r"));
                left.join(right, (x, y) -> x + "+" + y).toStream().to("join-out");
                left.leftJoin(right, (x, y) -> x + "+" + y).toStream().to("left-out");
                break;
            }
            case "stream-table-join": {
                final KTable<String, String> t = b.table("t", Materialized.as("t"));
                b.<String, String>stream("s").flatMapValues(v -> Arrays.asList(v.split(" ")))
                    .join(t, (x, y) -> x + "+" + y).to("out");
                break;
            }
            case "read-through": {
                // Tables that are cached aggregations, read by joins within the same input record, before any flush.
                final KStream<String, String> s = b.<String, String>stream("s").flatMapValues(v -> Arrays.asList(v.split(" ")));
                final KTable<String, String> t = s.filter((k, v) -> v.startsWith("set=")).mapValues(v -> v.substring(4))
                    .groupByKey().reduce((x, y) -> y, Materialized.as("t"));
                final KTable<String, String> u = s.filter((k, v) -> v.startsWith("put=")).mapValues(v -> v.substring(4))
                    .groupByKey().reduce((x, y) -> y, Materialized.as("u"));
                s.filter((k, v) -> v.equals("get")).join(t, (x, y) -> x + "+" + y).to("st-out");
                t.join(u, (x, y) -> x + "+" + y).toStream().to("tt-out");
                break;
            }
            case "materialized-filter-mapvalues": {
                final KTable<String, String> t = b.table("in", Materialized.as("t"));
                t.filter((k, v) -> !v.startsWith("x"), Materialized.as("f")).toStream().to("filter-out");
                t.mapValues(v -> v.toUpperCase(), Materialized.as("m")).toStream().to("map-out");
                break;
            }
            case "time-windows":
                words(b).windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(5)).advanceBy(ms(5)))
                    .count(Materialized.as("tw"))
                    .toStream().map((w, v) -> KeyValue.pair(at(w), v)).to("out", Produced.with(S, L));
                break;
            case "time-windows-close":
                words(b).windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count(Materialized.as("twc"))
                    .toStream().map((w, v) -> KeyValue.pair(at(w), v)).to("out", Produced.with(S, L));
                break;
            case "sliding-windows":
                words(b).windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(10), ms(30)))
                    .count(Materialized.as("sw"))
                    .toStream().map((w, v) -> KeyValue.pair(at(w), v)).to("out", Produced.with(S, L));
                break;
            case "session-windows":
                words(b).windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(5), ms(10)))
                    .reduce((x, y) -> x + "|" + y, Materialized.as("ss"))
                    .toStream().map((w, v) -> KeyValue.pair(at(w), v)).to("out");
                break;
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
        return b.build();
    }

    public static void main(final String[] args) throws Exception {
        GoldenDriver.printAll(args[0], "cache-app", false, CacheTopologies::build);
    }
}
