package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs Kafka Streams' own TopologyTestDriver on JSON cases, one per stdin line, and prints one JSON line per
 * case: {"topics": {topic: [[keyHex|null, valueHex|null, timestamp], ...]}, "describe": "..."}, or
 * {"error": "..."}. The case language is documented in tests/support/dsl_spec.py; Programs.java builds it.
 */
public final class SemanticsOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(final String[] args) throws Exception {
        final PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err); // nothing but result lines on stdout
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String result;
            try {
                result = JSON.writeValueAsString(run(JSON.readTree(line)));
            } catch (final Throwable e) {
                final ObjectNode error = JSON.createObjectNode();
                final StringBuilder message = new StringBuilder(e.toString());
                for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
                    message.append(" <- ").append(cause);
                }
                error.put("error", message.toString());
                result = JSON.writeValueAsString(error);
            }
            out.println(result);
            out.flush();
        }
    }

    static ObjectNode run(final JsonNode testCase) throws Exception {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, testCase.path("application_id").asText("app"));
        final File stateDir = Files.createTempDirectory("semantics-oracle").toFile();
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.getAbsolutePath());
        props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, OracleRocksDBSettings.class);
        final JsonNode config = testCase.path("config");
        if (config.has("topology_optimization")) {
            props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, config.get("topology_optimization").asText());
        }
        final StreamsBuilder builder = new StreamsBuilder();
        Programs.build(builder, testCase.get("program"));
        final Topology topology = builder.build(props);  // optimized as topology.optimization says
        if (config.has("statestore_cache_max_bytes")) {
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, config.get("statestore_cache_max_bytes").asLong());
        }
        if ("log_and_continue".equals(config.path("processing_exception_handler").asText(null))) {
            props.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG,
                LogAndContinueProcessingExceptionHandler.class);
        }
        if ("payload".equals(config.path("timestamp_extractor").asText(null))) {
            props.put(StreamsConfig.DEFAULT_TIMESTAMP_EXTRACTOR_CLASS_CONFIG, PayloadTimestampExtractor.class);
        }
        final ObjectNode result = JSON.createObjectNode();
        result.put("describe", topology.describe().toString());
        // the mocked wall clock starts at 0, as streamlet's driver's does: wall-clock punctuations are reproducible
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props, java.time.Instant.ofEpochMilli(0))) {
            final Map<String, TestInputTopic<String, String>> inputs = new HashMap<>();
            for (final JsonNode step : testCase.get("inputs")) {
                if (step.has("advance")) {
                    driver.advanceWallClockTime(Duration.ofMillis(step.get("advance").asLong()));
                    continue;
                }
                final String topic = step.get("topic").asText();
                final TestInputTopic<String, String> input = inputs.computeIfAbsent(
                    topic, t -> driver.createInputTopic(t, new StringSerializer(), new StringSerializer()));
                final String key = step.get("key").isNull() ? null : step.get("key").asText();
                final String value = step.get("value").isNull() ? null : step.get("value").asText();
                input.pipeInput(key, value, step.get("timestamp").asLong());
            }
            final ObjectNode topics = result.putObject("topics");
            for (final String topic : new TreeSet<>(driver.producedTopicNames())) {
                final TestOutputTopic<byte[], byte[]> output =
                    driver.createOutputTopic(topic, new ByteArrayDeserializer(), new ByteArrayDeserializer());
                final ArrayNode records = topics.putArray(topic);
                for (final TestRecord<byte[], byte[]> record : output.readRecordsToList()) {
                    final ArrayNode r = records.addArray();
                    r.add(record.key() == null ? null : HEX.formatHex(record.key()));
                    r.add(record.value() == null ? null : HEX.formatHex(record.value()));
                    r.add(record.timestamp());
                }
            }
        } finally {
            deleteRecursively(stateDir);
        }
        return result;
    }

    private static void deleteRecursively(final File file) {
        final File[] children = file.listFiles();
        if (children != null) {
            for (final File child : children) {
                deleteRecursively(child);
            }
        }
        file.delete();
    }
}
