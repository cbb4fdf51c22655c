import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Opens a transaction, writes records into it, prints "SENT <count>" once the broker has
 * acknowledged them, and then waits: the test kills it with SIGKILL, which leaves the
 * transaction open until its (long) transaction.timeout.ms, as a crashed producer does.
 * Args: bootstrap topic partition transactionalId count transactionTimeoutMs
 */
public final class OpenTransactionProducer {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[3]);
    props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, Integer.parseInt(args[5]));
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    KafkaProducer<String, String> producer = new KafkaProducer<>(props);
    producer.initTransactions();
    producer.beginTransaction();
    int partition = Integer.parseInt(args[2]);
    int count = Integer.parseInt(args[4]);
    for (int i = 0; i < count; i++) {
      producer.send(new ProducerRecord<>(args[1], partition, "k" + i, "open-" + i)).get();
    }
    System.out.println("SENT " + count);
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
