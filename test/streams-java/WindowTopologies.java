import java.time.Duration;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Windows, suppression and stream-stream joins through Kafka Streams' own TopologyTestDriver
 * (caching off) on the inputs in packages/streams/test/golden/windows-inputs.json; prints, as
 * JSON, each topology's describe() text, every output record (windowed keys as the hex of the
 * bytes WindowedSerdes wrote) and the task's dropped-records-total. The same topologies are in
 * TypeScript in packages/streams/test/windows-topologies.ts; the two must stay in step.
 */
public final class WindowTopologies {
    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();

    static Duration ms(final long n) {
        return Duration.ofMillis(n);
    }

    static String at(final Windowed<String> w) {
        return w.key() + "@" + w.window().start() + "/" + w.window().end();
    }

    static Topology build(final String name) {
        final StreamsBuilder b = new StreamsBuilder();
        switch (name) {
            case "tumbling-count": {
                final KTable<Windowed<String>, Long> t = b.stream("clicks", Consumed.with(S, S))
                    .groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(5)))
                    .count();
                t.toStream().to("tumbling-windowed", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 10L), L));
                t.toStream().map((w, v) -> KeyValue.pair(at(w), String.valueOf(v))).to("tumbling-out");
                return b.build();
            }
            case "hopping-aggregate": {
                b.stream("letters", Consumed.with(S, S))
                    .groupByKey()
                    .windowedBy(TimeWindows.ofSizeWithNoGrace(ms(10)).advanceBy(ms(5)))
                    .aggregate(() -> "", (k, v, a) -> a + v,
                        Materialized.<String, String, WindowStore<Bytes, byte[]>>as("hop-store").withValueSerde(S))
                    .toStream()
                    .map((w, v) -> KeyValue.pair(at(w), v))
                    .to("hopping-out");
                return b.build();
            }
            case "sliding": {
                final KGroupedStream<String, String> g = b.stream("points", Consumed.with(S, S)).groupByKey();
                g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(10), ms(30)))
                    .count()
                    .toStream()
                    .map((w, v) -> KeyValue.pair(at(w), String.valueOf(v)))
                    .to("sliding-out");
                g.windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(ms(5)))
                    .reduce((a, v) -> a + "," + v)
                    .toStream()
                    .to("sliding-reduce-out", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5L), S));
                return b.build();
            }
            case "session": {
                final KGroupedStream<String, String> g = b.stream("activity", Consumed.with(S, S)).groupByKey();
                final KTable<Windowed<String>, String> s = g
                    .windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(5), ms(10)))
                    .aggregate(() -> "", (k, v, a) -> a + v, (k, a1, a2) -> a1 + "|" + a2, Materialized.with(S, S));
                s.toStream().to("session-windowed", Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), S));
                s.toStream().map((w, v) -> KeyValue.pair(at(w), v)).to("session-out");
                g.windowedBy(SessionWindows.ofInactivityGapWithNoGrace(ms(3)))
                    .count()
                    .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("sess-final"))
                    .toStream()
                    .map((w, v) -> KeyValue.pair(at(w), String.valueOf(v)))
                    .to("session-final-out");
                return b.build();
            }
            case "suppress-final": {
                b.stream("events", Consumed.with(S, S))
                    .groupByKey()
                    .windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(2)))
                    .count(Materialized.as("final-counts"))
                    .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
                    .toStream()
                    .map((w, v) -> KeyValue.pair(at(w), String.valueOf(v)))
                    .to("final-out");
                return b.build();
            }
            case "suppress-time-limit": {
                b.stream("views", Consumed.with(S, S))
                    .groupByKey()
                    .count()
                    .suppress(Suppressed.untilTimeLimit(ms(10), BufferConfig.maxRecords(2).emitEarlyWhenFull()))
                    .toStream()
                    .to("limit-out", Produced.with(S, L));
                return b.build();
            }
            case "join-inner": {
                final KStream<String, String> left = b.stream("left", Consumed.with(S, S));
                final KStream<String, String> right = b.stream("right", Consumed.with(S, S));
                left.join(right, (l, r) -> l + "+" + r, JoinWindows.ofTimeDifferenceAndGrace(ms(10), ms(5)), StreamJoined.with(S, S, S))
                    .to("join-out");
                return b.build();
            }
            case "join-left": {
                final KStream<String, String> left = b.stream("left", Consumed.with(S, S));
                final KStream<String, String> right = b.stream("right", Consumed.with(S, S));
                left.leftJoin(right, (l, r) -> l + "+" + r, JoinWindows.ofTimeDifferenceWithNoGrace(ms(10)).after(ms(20)),
                        StreamJoined.with(S, S, S).withName("lj").withStoreName("lj-store"))
                    .to("join-out");
                return b.build();
            }
            case "join-outer": {
                final KStream<String, String> left = b.stream("left", Consumed.with(S, S));
                final KStream<String, String> right = b.stream("right", Consumed.with(S, S))
                    .selectKey((k, v) -> v.substring(0, 1));
                left.outerJoin(right, (l, r) -> l + "+" + r, JoinWindows.ofTimeDifferenceAndGrace(ms(5), ms(2)), StreamJoined.with(S, S, S))
                    .to("join-out");
                return b.build();
            }
            case "rekeyed-window": {
                b.stream("pageviews", Consumed.with(S, S))
                    .selectKey((k, v) -> v)
                    .groupByKey(Grouped.<String, String>as("by-page").withKeySerde(S).withValueSerde(S))
                    .windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(0)))
                    .reduce((a, v) -> a + "," + v, Materialized.as("page-store"))
                    .toStream()
                    .map((w, v) -> KeyValue.pair(at(w), v))
                    .to("rekeyed-out");
                return b.build();
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
    }

    public static void main(final String[] args) throws Exception {
        GoldenDriver.printAll(args[0], "windows-app", true, WindowTopologies::build);
    }
}
