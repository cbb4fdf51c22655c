import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.tools.ConfigCommand;

/**
 * Runs kafka-configs.sh invocations and a throttled producer in one JVM, so a scenario costs one
 * JVM start. Usage: QuotaSteps BOOTSTRAP STEP (:: STEP)* where a step is `configs ARGS...`
 * (ConfigCommand.main as kafka-configs.sh runs it; a failing command's exit is caught and its
 * output kept) or `produce TOPIC CLIENT_ID` (sends 10 KB records until the producer's
 * produce-throttle-time-max metric is above zero, or 40 s pass; prints "throttle-time-max > 0"
 * or "not throttled") or `topics CLIENT_ID NAME:PARTITIONS...` (one Admin.createTopics call with
 * retryOnQuotaViolation(false), KIP-599; prints each topic's outcome in the order given). Each
 * step's output starts with a line "=== step N"; stderr goes to stdout.
 */
public final class QuotaSteps {
  public static void main(String[] args) throws Exception {
    System.setErr(System.out);
    Exit.setExitProcedure((code, message) -> {
      throw new IllegalStateException("exit " + code);
    });
    String bootstrap = args[0];
    List<List<String>> steps = new ArrayList<>();
    steps.add(new ArrayList<>());
    for (int i = 1; i < args.length; i++) {
      if (args[i].equals("::")) steps.add(new ArrayList<>());
      else steps.get(steps.size() - 1).add(args[i]);
    }
    for (int n = 0; n < steps.size(); n++) {
      List<String> step = steps.get(n);
      System.out.println("=== step " + n);
      if (step.get(0).equals("configs")) {
        try {
          ConfigCommand.main(step.subList(1, step.size()).toArray(new String[0]));
        } catch (IllegalStateException e) {
          System.out.println(e.getMessage());
        }
      } else if (step.get(0).equals("topics")) {
        createTopics(bootstrap, step.get(1), step.subList(2, step.size()));
      } else {
        produce(bootstrap, step.get(1), step.get(2));
      }
      System.out.flush();
    }
    Exit.resetExitProcedure();
  }

  private static void produce(String bootstrap, String topic, String clientId) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", clientId);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("acks", "1");
    p.put("linger.ms", "0");
    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
    double max = 0;
    long deadline = System.currentTimeMillis() + 40_000;
    byte[] value = new byte[10_000];
    while (max <= 0 && System.currentTimeMillis() < deadline) {
      producer.send(new ProducerRecord<>(topic, value));
      Thread.sleep(50);
      for (var e : producer.metrics().entrySet()) {
        MetricName name = e.getKey();
        if (name.name().equals("produce-throttle-time-max") && name.group().equals("producer-metrics")) {
          Object v = ((Metric) e.getValue()).metricValue();
          if (v instanceof Double d && !d.isNaN()) max = Math.max(max, d);
        }
      }
    }
    System.out.println(max > 0 ? "throttle-time-max > 0" : "not throttled");
    producer.close(Duration.ZERO);
  }

  private static void createTopics(String bootstrap, String clientId, List<String> specs) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("client.id", clientId);
    List<NewTopic> topics = new ArrayList<>();
    for (String spec : specs) {
      String[] parts = spec.split(":");
      topics.add(new NewTopic(parts[0], Integer.parseInt(parts[1]), (short) 1));
    }
    try (Admin admin = Admin.create(p)) {
      var result = admin.createTopics(topics, new CreateTopicsOptions().retryOnQuotaViolation(false));
      for (NewTopic t : topics) {
        try {
          result.values().get(t.name()).get();
          System.out.println(t.name() + ": created");
        } catch (ExecutionException e) {
          Throwable c = e.getCause();
          String throttle = c instanceof org.apache.kafka.common.errors.ThrottlingQuotaExceededException q ? (q.throttleTimeMs() > 0 ? " (throttle > 0)" : " (no throttle)") : "";
          System.out.println(t.name() + ": " + c.getClass().getSimpleName() + ": " + c.getMessage() + throttle);
        }
      }
    }
  }
}
