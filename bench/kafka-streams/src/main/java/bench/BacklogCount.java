package bench;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The backlog replay of bench/backlog.py, the twin of bench/peers/streamlet_backlog.py: orders keyed by order id
 * with the customer as value, re-keyed by customer (repartition topic "by-customer"), counted per customer in
 * tumbling 1-minute windows with 1 minute of grace, every update to OUTPUT with TimeWindowedSerde keys.
 * Every second it prints "DROPPED n": the sum of its dropped-records-total metrics.
 * Args: BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR THREADS COMMIT_INTERVAL_MS CACHE_MAX_BYTES. Stops on SIGTERM.
 */
public final class BacklogCount {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[5]));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args[6]));
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, Long.parseLong(args[7]));
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(args[2])
            .groupBy((order, customer) -> customer, Grouped.as("by-customer"))
            .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofMinutes(1)))
            .count(Materialized.as("orders-per-minute"))
            .toStream()
            .to(args[3], Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> System.out.println("STATE " + now + " " + System.currentTimeMillis()));
        Thread reporter = new Thread(() -> {
            try {
                while (true) {
                    Thread.sleep(1000);
                    double dropped = 0;
                    for (Metric metric : streams.metrics().values()) {
                        if (metric.metricName().name().equals("dropped-records-total")) {
                            dropped += ((Number) metric.metricValue()).doubleValue();
                        }
                    }
                    System.out.println("DROPPED " + (long) dropped);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        reporter.setDaemon(true);
        CountDownLatch latch = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            latch.countDown();
        }));
        streams.start();
        reporter.start();
        latch.await();
    }
}
