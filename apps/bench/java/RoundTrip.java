// L2's Java side: one record at a time, produce then poll until it is back, timed with
// System.nanoTime in microseconds after an uncounted warm-up, as the Node clients' roundtrip
// job does (child.ts). Kafka's EndToEndLatency tool counts every record and prints whole
// milliseconds, which cannot tell 0.4 ms from 1.4 ms.
//
//   java -cp <kafka libs>/*:<out> RoundTrip <bootstrap> <topic> <records> <warmup> <acks>
// prints "RESULT p50 p99 p999 max" in microseconds on its last line.
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class RoundTrip {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int records = Integer.parseInt(args[2]);
    int warmup = Integer.parseInt(args[3]);
    String acks = args[4];

    Properties pp = new Properties();
    pp.put("bootstrap.servers", bootstrap);
    pp.put("acks", acks);
    pp.put("linger.ms", "0");
    pp.put("enable.idempotence", "false");
    pp.put("key.serializer", ByteArraySerializer.class.getName());
    pp.put("value.serializer", ByteArraySerializer.class.getName());
    Properties cp = new Properties();
    cp.put("bootstrap.servers", bootstrap);
    cp.put("group.id", "bench-roundtrip-" + topic);
    cp.put("auto.offset.reset", "latest");
    cp.put("enable.auto.commit", "false");
    cp.put("fetch.min.bytes", "1");
    cp.put("fetch.max.wait.ms", "500");
    cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
    cp.put("value.deserializer", ByteArrayDeserializer.class.getName());

    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
      consumer.subscribe(List.of(topic));
      // Joined and positioned at the end of every partition before the first timed record.
      long deadline = System.nanoTime() + 60_000_000_000L;
      while (consumer.assignment().isEmpty()) {
        consumer.poll(Duration.ofMillis(100));
        if (System.nanoTime() > deadline) throw new IllegalStateException("no assignment in 60 s");
      }
      consumer.seekToEnd(consumer.assignment());
      for (var tp : consumer.assignment()) consumer.position(tp);

      Random random = new Random(1);
      byte[] value = new byte[100];
      long[] micros = new long[records];
      for (int i = 0; i < warmup + records; i++) {
        for (int j = 4; j < value.length; j++) value[j] = (byte) (65 + random.nextInt(26));
        ByteBuffer.wrap(value).putInt(0, i);
        byte[] key = String.format("%010d", random.nextInt(Integer.MAX_VALUE)).getBytes();
        long t0 = System.nanoTime();
        producer.send(new ProducerRecord<>(topic, key, value.clone()));
        boolean back = false;
        long until = t0 + 10_000_000_000L;
        while (!back) {
          for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(1))) {
            if (ByteBuffer.wrap(r.value()).getInt(0) == i) back = true;
          }
          if (!back && System.nanoTime() > until) throw new IllegalStateException("record " + i + " did not arrive within 10 s");
        }
        if (i >= warmup) micros[i - warmup] = (System.nanoTime() - t0) / 1000;
      }
      Arrays.sort(micros);
      System.out.println("RESULT " + at(micros, 0.5) + " " + at(micros, 0.99) + " " + at(micros, 0.999) + " " + micros[micros.length - 1]);
    }
  }

  private static long at(long[] sorted, double q) {
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
  }
}
