import java.time.Duration;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Part two of the window goldens: Materialized.withRetention, KIP-825 emit strategies and
 * KIP-150 cogroup through Kafka Streams' own TopologyTestDriver (caching off), on
 * packages/streams/test/golden/windows2-inputs.json; prints what GoldenDriver prints, plus the
 * final contents of the stores each spec names. The TypeScript twins are in
 * packages/streams/test/windows2-topologies.ts; the two must stay in step.
 */
public final class MoreWindowTopologies {
    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();

    static Duration ms(final long n) {
        return Duration.ofMillis(n);
    }

    static <V> void out(final KTable<Windowed<String>, V> t, final String topic) {
        t.toStream().map((w, v) -> KeyValue.pair(GoldenDriver.at(w), String.valueOf(v))).to(topic, Produced.with(S, S));
    }

    static Topology build(final String name) {
        final StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "retention": {
                final KGroupedStream<String, String> g = b.stream("clicks", Consumed.with(S, S)).groupByKey();
                out(g.windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(2))).count(Materialized.as("short-store")), "short-out");
                out(g.windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(2)))
                    .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("long-store").withRetention(ms(60))), "long-out");
                out(g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(ms(5)))
                    .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("sliding-store").withRetention(ms(40))), "sliding-out");
                out(g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(ms(4)))
                    .count(Materialized.<String, Long, SessionStore<Bytes, byte[]>>as("session-store").withRetention(ms(50))), "session-out");
                return b.build();
            }
            case "emit-time": {
                final KGroupedStream<String, String> g = b.stream("clicks", Consumed.with(S, S)).groupByKey();
                final KTable<Windowed<String>, Long> hop = g.windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(3)).advanceBy(ms(5)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count(Materialized.as("hop-final"));
                out(hop, "hop-final-out");
                hop.toStream().to("hop-final-windowed", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), L));
                out(g.windowedBy(TimeWindows.ofSizeWithNoGrace(ms(10)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .aggregate(() -> "", (k, v, a) -> a + v,
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>as("tumble-final").withValueSerde(S).withRetention(ms(100))), "tumble-final-out");
                out(g.windowedBy(TimeWindows.ofSizeWithNoGrace(ms(10))).emitStrategy(EmitStrategy.onWindowUpdate()).reduce((a, v) -> a + v), "tumble-update-out");
                return b.build();
            }
            case "emit-sliding": {
                final KGroupedStream<String, String> g = b.stream("points", Consumed.with(S, S)).groupByKey();
                out(g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(5), ms(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .count(Materialized.as("slide-final")), "slide-final-out");
                return b.build();
            }
            case "emit-session": {
                final KGroupedStream<String, String> g = b.stream("activity", Consumed.with(S, S)).groupByKey();
                final KTable<Windowed<String>, String> s = g.windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(5), ms(2)))
                    .emitStrategy(EmitStrategy.onWindowClose())
                    .aggregate(() -> "", (k, v, a) -> a + v, (k, a1, a2) -> a1 + "|" + a2, Materialized.<String, String, SessionStore<Bytes, byte[]>>as("sess-final").withValueSerde(S));
                out(s, "sess-final-out");
                s.toStream().to("sess-final-windowed", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), S));
                return b.build();
            }
            case "cogroup": {
                final KGroupedStream<String, String> clicks = b.stream("clicks", Consumed.with(S, S)).groupByKey();
                final KGroupedStream<String, String> views = b.stream("views", Consumed.with(S, S)).groupByKey();
                final KGroupedStream<String, String> buys = b.stream("buys", Consumed.with(S, S)).groupBy((k, v) -> v, Grouped.with(S, S));
                clicks.<String>cogroup((k, v, a) -> a + "c" + v)
                    .cogroup(views, (k, v, a) -> a + "v" + v)
                    .cogroup(buys, (k, v, a) -> a + "b" + v)
                    .aggregate(() -> "", Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("cog-store").withValueSerde(S))
                    .toStream()
                    .to("cog-out", Produced.with(S, S));
                clicks.<Long>cogroup((k, v, a) -> a + 1)
                    .cogroup(views, (k, v, a) -> a + 10)
                    .aggregate(() -> 0L, Named.as("tally"), Materialized.with(S, L))
                    .toStream()
                    .mapValues(v -> String.valueOf(v))
                    .to("tally-out", Produced.with(S, S));
                return b.build();
            }
            case "cogroup-windowed": {
                final KGroupedStream<String, String> lower = b.stream("lower", Consumed.with(S, S)).groupByKey();
                final KGroupedStream<String, String> upper = b.stream("upper", Consumed.with(S, S)).groupByKey();
                out(lower.<String>cogroup((k, v, a) -> a + v).cogroup(upper, (k, v, a) -> a + v.toUpperCase())
                    .windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(2)))
                    .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>as("cog-win").withValueSerde(S)), "cog-win-out");
                out(lower.<String>cogroup((k, v, a) -> a + v).cogroup(upper, (k, v, a) -> a + v.toUpperCase())
                    .windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(ms(5)))
                    .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>with(S, S)), "cog-slide-out");
                final CogroupedKStream<String, String> sessions = lower.<String>cogroup((k, v, a) -> a + v).cogroup(upper, (k, v, a) -> a + v.toUpperCase());
                out(sessions.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(ms(4)))
                    .aggregate(() -> "", (k, x, y) -> x + "|" + y, Named.as("sess"), Materialized.<String, String, SessionStore<Bytes, byte[]>>with(S, S)), "cog-sess-out");
                return b.build();
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
    }

    public static void main(final String[] args) throws Exception {
        GoldenDriver.printAll(args[0], "windows2-app", true, MoreWindowTopologies::build);
    }
}
