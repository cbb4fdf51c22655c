// The bench's streams scenarios (apps/bench/src/scenarios/streams.ts) on Kafka Streams (Java),
// the same topologies as apps/bench/src/streams/app.ts. Prints STARTING just before start()
// (so JVM and class loading are not timed) and runs until SIGTERM, which closes it.
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

public class StreamsBench {
  public static void main(String[] args) throws Exception {
    String scenario = args[0], bootstrap = args[1], appId = args[2], input = args[3], output = args[4], table = args[5], stateDir = args[6];
    long commitMs = Long.parseLong(args[7]);
    var S = Serdes.String();
    StreamsBuilder b = new StreamsBuilder();
    KStream<String, String> in = b.stream(input, Consumed.with(S, S));
    switch (scenario) {
      case "S1" -> in.filter((k, v) -> !v.endsWith("0")).mapValues(v -> v.toUpperCase()).to(output, Produced.with(S, S));
      case "S2" -> in.groupBy((k, v) -> v, Grouped.with(S, S)).count().toStream().to(output, Produced.with(S, Serdes.Long()));
      case "S3" -> in.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1))).count().toStream()
          .to(output, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.Long()));
      case "S4" -> {
        KTable<String, String> t = b.table(table, Consumed.with(S, S));
        in.leftJoin(t, (v, tv) -> v + "|" + tv).to(output, Produced.with(S, S));
      }
      default -> throw new IllegalArgumentException("unknown scenario " + scenario);
    }
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    // As @tidelog/streams: no record cache (every update forwarded) and in-memory stores (KIP-954).
    p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    p.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, org.apache.kafka.streams.state.BuiltInDslStoreSuppliers.InMemoryDslStoreSuppliers.class);
    p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    KafkaStreams app = new KafkaStreams(b.build(), p);
    CountDownLatch done = new CountDownLatch(1);
    app.setUncaughtExceptionHandler(e -> {
      System.out.println("ERROR " + e);
      done.countDown();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      app.close(Duration.ofSeconds(20));
      done.countDown();
    }));
    System.out.println("STARTING");
    System.out.flush();
    app.start();
    done.await();
  }
}
