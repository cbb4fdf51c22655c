import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * A real Kafka Streams application (not the TopologyTestDriver) for
 * test/interop/streams-java-broker.test.ts: it runs against a tidelog broker with
 * exactly_once_v2, so the broker serves everything Streams asks of it — internal topic
 * creation with their configs (a repartition topic, a compacted changelog, a compact,delete
 * windowed changelog), the StreamsPartitionAssignor's bytes over the classic protocol,
 * transactions with sendOffsetsToTransaction, requireStable offset fetches and the purge of
 * repartition records (DeleteRecords).
 *
 * Outputs carry their key in the value ("word=3"), so a reader of values alone can check them.
 *
 * Args: bootstrap, application.id, state.dir, group.instance.id, commit.interval.ms (a long one
 * keeps the first process's transaction open until it is killed), and optionally "wait": load
 * everything, print "LOADED" and start only once stdin says "go" (a warm replacement for
 * a process about to be killed, so the restart does not pay for JVM start-up). It prints "STATE <state>" on every state
 * change and "SEEN <n>" after each input record (so the test knows when to kill it -9 in the
 * middle of the stream), and runs until killed or until its stdin closes.
 */
public final class BrokerApp {
  private static final AtomicLong seen = new AtomicLong();

  private static void progress() {
    System.out.println("SEEN " + seen.incrementAndGet());
  }

  public static void main(String[] args) throws Exception {
    StreamsBuilder builder = new StreamsBuilder();

    KStream<String, String> lines = builder.stream("jsb-lines", Consumed.with(Serdes.String(), Serdes.String()));
    KGroupedStream<String, String> byWord = lines
        .peek((k, v) -> progress())
        .flatMapValues(v -> Arrays.asList(v.split(" ")))
        .groupBy((k, word) -> word, Grouped.with("by-word", Serdes.String(), Serdes.String()));

    byWord
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("word-counts").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .mapValues((word, n) -> word + "=" + n)
        .to("jsb-word-counts", Produced.with(Serdes.String(), Serdes.String()));

    // A one-hour grace: every input record falls in a window that is still open, so the
    // expected counts do not depend on how far stream time got before a kill.
    byWord
        .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofHours(1)))
        .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("windowed-counts").withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream((wk, n) -> wk.key() + "@" + wk.window().start())
        .mapValues((key, n) -> key + "=" + n)
        .to("jsb-windowed-counts", Produced.with(Serdes.String(), Serdes.String()));

    KTable<String, String> users = builder.table(
        "jsb-users",
        Consumed.with(Serdes.String(), Serdes.String()),
        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("users-store").withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
    builder.stream("jsb-clicks", Consumed.with(Serdes.String(), Serdes.String()))
        .peek((k, v) -> progress())
        .join(users, (user, page, region) -> user + ":" + page + "@" + region)
        .to("jsb-joined", Produced.with(Serdes.String(), Serdes.String()));

    Properties props = new Properties();
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
    // TIDELOG_JSB_GUARANTEE=at_least_once shows the test can fail: the kill then duplicates output.
    String guarantee = System.getenv("TIDELOG_JSB_GUARANTEE");
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee != null ? guarantee : StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    // No record cache: every update is forwarded, so the output is each key's full count
    // sequence (1, 2, ..., n) and a duplicate or a gap after the kill is visible.
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args[4]));
    // Streams refuses a commit interval longer than the transaction timeout (10 s under EOS).
    props.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), 60000);
    // The broker's group.min.session.timeout.ms: the killed member leaves the group soonest.
    props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
    props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
    // Static membership (KIP-345): the restarted process takes its tasks back at once.
    props.put(StreamsConfig.consumerPrefix("group.instance.id"), args[3]);
    // Purge consumed repartition records soon (DeleteRecords), not after the 30 s default.
    props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 200);

    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    org.apache.kafka.streams.Topology topology = builder.build(props);
    if (args.length > 5 && args[5].equals("wait")) {
      System.out.println("LOADED");
      if (!"go".equals(in.readLine())) return;
    }
    KafkaStreams streams = new KafkaStreams(topology, props);
    CountDownLatch done = new CountDownLatch(1);
    streams.setStateListener((now, before) -> {
      System.out.println("STATE " + now);
      if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) done.countDown();
    });
    streams.setUncaughtExceptionHandler(e -> {
      System.out.println("ERROR " + e);
      e.printStackTrace(System.out);
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    Thread stdin = new Thread(() -> {
      try {
        while (in.readLine() != null) { }
      } catch (Exception ignored) {
      }
      done.countDown();
    });
    stdin.setDaemon(true);
    stdin.start();
    streams.start();
    done.await();
    streams.close(Duration.ofSeconds(10));
    System.out.println("CLOSED");
  }
}
