import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.tools.AclCommand;

/**
 * Runs a script of kafka-acls.sh invocations and producer attempts in one JVM, so a scenario
 * costs one JVM start instead of one per step. Usage: AclSteps BOOTSTRAP PRODUCER_PROPS STEP (:: STEP)*
 * where a step is `acls ARGS...` (AclCommand.main, as kafka-acls.sh runs it) or `produce TOPIC`
 * (two records with the producer properties; prints "produced" or the refusal's class and message).
 * Each step's output starts with a line "=== step N".
 */
public final class AclSteps {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    Properties producer = new Properties();
    try (FileInputStream in = new FileInputStream(args[1])) {
      producer.load(in);
    }
    List<List<String>> steps = new ArrayList<>();
    steps.add(new ArrayList<>());
    for (int i = 2; i < args.length; i++) {
      if (args[i].equals("::")) steps.add(new ArrayList<>());
      else steps.get(steps.size() - 1).add(args[i]);
    }
    for (int n = 0; n < steps.size(); n++) {
      List<String> step = steps.get(n);
      System.out.println("=== step " + n);
      if (step.get(0).equals("acls")) {
        AclCommand.main(step.subList(1, step.size()).toArray(new String[0]));
      } else {
        produce(bootstrap, producer, step.get(1));
      }
      System.out.flush();
    }
  }

  private static void produce(String bootstrap, Properties base, String topic) {
    Properties p = new Properties();
    p.putAll(base);
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    p.put("max.block.ms", "15000");
    p.put("request.timeout.ms", "10000");
    p.put("delivery.timeout.ms", "15000");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      producer.send(new ProducerRecord<>(topic, "one")).get();
      producer.send(new ProducerRecord<>(topic, "two")).get();
      System.out.println("produced");
    } catch (ExecutionException e) {
      System.out.println("refused: " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
    } catch (Exception e) {
      System.out.println("refused: " + e.getClass().getSimpleName() + ": " + e.getMessage());
    }
  }
}
