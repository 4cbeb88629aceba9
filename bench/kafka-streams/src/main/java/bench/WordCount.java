package bench;

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * Kafka Streams' WordCountDemo, node for node, with its settings taken from the command line:
 * BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR THREADS COMMIT_INTERVAL_MS CACHE_MAX_BYTES [GUARANTEE [LINGER_MS]].
 * System properties -Dstreams.NAME=VALUE set any other config NAME.
 * LINGER_MS sets the producer's linger.ms (Kafka Streams' own default is 100; the latency benchmark gives
 * every peer the same).
 * Prints "RUNNING <epoch ms>" when the client reaches RUNNING and, for the restoration benchmark,
 * "RESTORE_START/RESTORE_END <epoch ms> <records>" from a restore listener. Stops on SIGTERM.
 */
public final class WordCount {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[5]));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args[6]));
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, Long.parseLong(args[7]));
        if (args.length > 8) {
            props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[8]);  // e.g. exactly_once_v2
        }
        if (args.length > 9) {
            props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), Integer.parseInt(args[9]));
        }
        // -Dstreams.<config>=<value>: any other Kafka Streams config (the migration benchmark's probing interval)
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("streams.")) {
                props.put(name.substring("streams.".length()), System.getProperty(name));
            }
        }
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2])
            .flatMapValues(value -> Arrays.asList(value.toLowerCase(Locale.getDefault()).split("\\W+")))
            .groupBy((key, value) -> value)
            .count(Materialized.as("counts-store"))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        AtomicLong restored = new AtomicLong();
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                System.out.println("RESTORE_START " + System.currentTimeMillis() + " " + tp + " " + start + " " + end);
            }
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
                restored.addAndGet(n);
            }
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                System.out.println("RESTORE_END " + System.currentTimeMillis() + " " + tp + " " + total);
            }
        });
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now + " " + System.currentTimeMillis());
        });
        CountDownLatch latch = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            latch.countDown();
        }));
        streams.start();
        latch.await();
    }
}
