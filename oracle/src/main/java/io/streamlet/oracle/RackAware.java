package io.streamlet.oracle;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.InternalTopicManager;
import org.apache.kafka.streams.processor.internals.TopologyMetadata.Subtopology;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;

/**
 * KIP-925 inputs of a case for Kafka Streams' own {@link RackAwareTaskAssignor}, built the way
 * {@code StreamsPartitionAssignor} builds them:
 * <ul>
 *   <li>{@code partition_replica_racks} ({@code topic -> [[rack or null per replica] per partition]}) becomes
 *       the {@link Cluster} metadata (one broker per replica, {@code null} = a broker without a rack) and
 *       the answers of an {@link InternalTopicManager} whose {@code getTopicPartitionInfo} describes the same
 *       topics (Kafka Streams describes changelog topics, which are not in the consumer's metadata);</li>
 *   <li>{@code task_partitions} ({@code task -> {source: [[topic, p]], changelog: [...]}}) becomes
 *       {@code partitionsForTask} / {@code changelogPartitionsForTask};</li>
 *   <li>every client's {@code rack} is the rack of each of its consumers ({@code racksForProcessConsumer});</li>
 *   <li>{@code tasksForTopicGroup}: every task, grouped by sub-topology.</li>
 * </ul>
 */
final class RackAware {
    private RackAware() {
    }

    static RackAwareTaskAssignor create(final JsonNode root,
                                        final Set<TaskId> allTasks,
                                        final Map<ProcessId, String> keyForProcess,
                                        final Map<ProcessId, Integer> capacityForProcess,
                                        final AssignmentConfigs configs) {
        // Cluster metadata: a fresh broker (node) for every replica, carrying that replica's rack.
        final List<Node> nodes = new ArrayList<>();
        final List<PartitionInfo> partitionInfos = new ArrayList<>();
        final Map<String, List<TopicPartitionInfo>> described = new HashMap<>();
        final Iterator<Map.Entry<String, JsonNode>> topics = root.path("partition_replica_racks").fields();
        while (topics.hasNext()) {
            final Map.Entry<String, JsonNode> topic = topics.next();
            final List<TopicPartitionInfo> infos = new ArrayList<>();
            int partition = 0;
            for (final JsonNode replicas : topic.getValue()) {
                final List<Node> replicaNodes = new ArrayList<>();
                for (final JsonNode rack : replicas) {
                    final Node node = new Node(nodes.size(), "broker-" + nodes.size(), 9092, rack.isNull() ? null : rack.asText());
                    nodes.add(node);
                    replicaNodes.add(node);
                }
                final Node leader = replicaNodes.isEmpty() ? null : replicaNodes.get(0);
                final Node[] array = replicaNodes.toArray(new Node[0]);
                partitionInfos.add(new PartitionInfo(topic.getKey(), partition, leader, array, array));
                infos.add(new TopicPartitionInfo(partition, leader, replicaNodes, replicaNodes));
                partition++;
            }
            described.put(topic.getKey(), infos);
        }
        final Cluster cluster = new Cluster("oracle", nodes, partitionInfos, Collections.emptySet(), Collections.emptySet());

        final Map<TaskId, Set<TopicPartition>> partitionsForTask = new HashMap<>();
        final Map<TaskId, Set<TopicPartition>> changelogPartitionsForTask = new HashMap<>();
        final Iterator<Map.Entry<String, JsonNode>> tasks = root.path("task_partitions").fields();
        while (tasks.hasNext()) {
            final Map.Entry<String, JsonNode> entry = tasks.next();
            final TaskId task = TaskId.parse(entry.getKey());
            final Set<TopicPartition> source = partitions(entry.getValue().path("source"));
            final Set<TopicPartition> changelog = partitions(entry.getValue().path("changelog"));
            if (!source.isEmpty()) {
                partitionsForTask.put(task, source);
            }
            if (!changelog.isEmpty()) {
                changelogPartitionsForTask.put(task, changelog);
            }
        }

        final Map<Subtopology, Set<TaskId>> tasksForTopicGroup = new HashMap<>();
        for (final TaskId task : allTasks) {
            tasksForTopicGroup.computeIfAbsent(new Subtopology(task.subtopology(), null), k -> new HashSet<>()).add(task);
        }

        final Map<ProcessId, Map<String, Optional<String>>> racksForProcessConsumer = new HashMap<>();
        for (final Map.Entry<ProcessId, String> client : keyForProcess.entrySet()) {
            final JsonNode rack = root.path("clients").path(client.getValue()).path("rack");
            final Optional<String> rackId = rack.isMissingNode() || rack.isNull() ? Optional.empty() : Optional.of(rack.asText());
            final Map<String, Optional<String>> consumers = new HashMap<>();
            for (int i = 0; i < capacityForProcess.get(client.getKey()); i++) {
                consumers.put(String.format("%s-StreamThread-%d-consumer", client.getValue(), i + 1), rackId);
            }
            racksForProcessConsumer.put(client.getKey(), consumers);
        }

        return new RackAwareTaskAssignor(cluster, partitionsForTask, changelogPartitionsForTask, tasksForTopicGroup,
            racksForProcessConsumer, new DescribingTopicManager(described), configs, Time.SYSTEM);
    }

    private static Set<TopicPartition> partitions(final JsonNode list) {
        final Set<TopicPartition> result = new HashSet<>();
        for (final JsonNode tp : list) {
            result.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
        }
        return result;
    }

    /** Describes topics from the case instead of asking brokers; a topic not in the case is not found. */
    private static final class DescribingTopicManager extends InternalTopicManager {
        private final Map<String, List<TopicPartitionInfo>> described;

        DescribingTopicManager(final Map<String, List<TopicPartitionInfo>> described) {
            super(Time.SYSTEM, null, new StreamsConfig(streamsProperties()));
            this.described = described;
        }

        private static Properties streamsProperties() {
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, "oracle");
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
            return props;
        }

        @Override
        public Map<String, List<TopicPartitionInfo>> getTopicPartitionInfo(final Set<String> topics) {
            final Map<String, List<TopicPartitionInfo>> result = new HashMap<>();
            for (final String topic : topics) {
                if (described.containsKey(topic)) {
                    result.put(topic, described.get(topic));
                }
            }
            return result;
        }
    }
}
