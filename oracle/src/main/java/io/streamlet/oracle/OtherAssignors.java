package io.streamlet.oracle;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils;
import org.apache.kafka.streams.processor.assignment.TaskAssignor;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
import org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.DefaultKafkaStreamsState;
import org.apache.kafka.streams.processor.internals.assignment.DefaultTaskTopicPartition;
import org.apache.kafka.streams.processor.internals.assignment.FallbackPriorTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Kafka Streams' sticky assignors on the same prepared {@link ClientState}s as HATA:
 * the KIP-924 {@link StickyTaskAssignor} and the internal {@link LegacyStickyTaskAssignor} and
 * {@link FallbackPriorTaskAssignor}.
 *
 * <p>These assignors walk {@code HashMap}s and {@code HashSet}s, so their inputs are built the way
 * the leader builds them (a fresh {@code HashMap}/{@code HashSet} filled element by element), with a
 * fixed insertion order: clients in {@code ProcessId} order, tasks in {@code TaskId} order. streamlet
 * reproduces exactly these orders.
 *
 * <p>One input order is not the leader's: {@code StickyTaskAssignor.assignStandby} collects the
 * stateful {@code TaskInfo}s into a {@code HashSet}, and Kafka Streams' {@code DefaultTaskInfo} has no
 * {@code hashCode()}, so that order follows identity hash codes and differs between JVM runs. Here
 * {@link OracleTaskInfo#hashCode()} is the task's rank among the stateful (or stateless) tasks, which
 * makes the set iterate in {@code TaskId} order.
 */
final class OtherAssignors {
    private OtherAssignors() {
    }

    /** Runs LegacyStickyTaskAssignor ("legacy_sticky") or FallbackPriorTaskAssignor ("fallback_prior"). */
    static boolean runLegacy(final String assignor,
                             final TreeMap<ProcessId, ClientState> sortedClients,
                             final Set<TaskId> statelessTasks,
                             final Set<TaskId> statefulTasks,
                             final RackAwareTaskAssignor rackAwareTaskAssignor,
                             final AssignmentConfigs configs) {
        final Map<ProcessId, ClientState> clients = new HashMap<>();
        for (final Map.Entry<ProcessId, ClientState> e : sortedClients.entrySet()) {
            clients.put(e.getKey(), e.getValue());
        }
        final Set<TaskId> allTasks = new HashSet<>();
        for (final TaskId t : union(statelessTasks, statefulTasks)) {
            allTasks.add(t);
        }
        final Set<TaskId> stateful = new HashSet<>();
        for (final TaskId t : new TreeSet<>(statefulTasks)) {
            stateful.add(t);
        }
        if ("fallback_prior".equals(assignor)) {
            return new FallbackPriorTaskAssignor().assign(clients, allTasks, stateful, rackAwareTaskAssignor, configs);
        }
        return new LegacyStickyTaskAssignor().assign(clients, allTasks, stateful, rackAwareTaskAssignor, configs);
    }

    /** Runs the KIP-924 StickyTaskAssignor and checks its output as the leader does. */
    static Map<ProcessId, KafkaStreamsAssignment> runSticky(final TreeMap<ProcessId, ClientState> sortedClients,
                                                            final Set<TaskId> statelessTasks,
                                                            final Set<TaskId> statefulTasks,
                                                            final AssignmentConfigs configs,
                                                            final boolean mustPreserveActiveTaskAssignment) {
        final Map<TaskId, TaskInfo> tasks = new HashMap<>();
        int statelessRank = 0;
        int statefulRank = 0;
        for (final TaskId t : union(statelessTasks, statefulTasks)) {
            final boolean isStateful = statefulTasks.contains(t);
            tasks.put(t, new OracleTaskInfo(t, isStateful, isStateful ? statefulRank++ : statelessRank++));
        }
        final ApplicationState state = new OracleApplicationState(configs, tasks, sortedClients);
        final TaskAssignor assignor = new StickyTaskAssignor(mustPreserveActiveTaskAssignment);
        final TaskAssignor.TaskAssignment assignment = assignor.assign(state);
        final TaskAssignor.AssignmentError error = TaskAssignmentUtils.validateTaskAssignment(state, assignment);
        if (error != TaskAssignor.AssignmentError.NONE) {
            throw new IllegalStateException("StickyTaskAssignor returned an invalid assignment: " + error);
        }
        final Map<ProcessId, KafkaStreamsAssignment> result = new HashMap<>();
        for (final KafkaStreamsAssignment a : assignment.assignment()) {
            result.put(a.processId(), a);
        }
        return result;
    }

    private static TreeSet<TaskId> union(final Set<TaskId> a, final Set<TaskId> b) {
        final TreeSet<TaskId> all = new TreeSet<>(a);
        all.addAll(b);
        return all;
    }

    /** DefaultApplicationState's behaviour, over clients given in ProcessId order. */
    private static final class OracleApplicationState implements ApplicationState {
        private final AssignmentConfigs configs;
        private final Map<TaskId, TaskInfo> tasks;
        private final TreeMap<ProcessId, ClientState> clients;
        private final Map<Boolean, Map<ProcessId, KafkaStreamsState>> cached = new HashMap<>();

        OracleApplicationState(final AssignmentConfigs configs,
                               final Map<TaskId, TaskInfo> tasks,
                               final TreeMap<ProcessId, ClientState> clients) {
            this.configs = configs;
            this.tasks = Collections.unmodifiableMap(tasks);
            this.clients = clients;
        }

        @Override
        public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(final boolean computeTaskLags) {
            return cached.computeIfAbsent(computeTaskLags, lags -> {
                final Map<ProcessId, KafkaStreamsState> states = new HashMap<>();
                for (final Map.Entry<ProcessId, ClientState> e : clients.entrySet()) {
                    final ClientState c = e.getValue();
                    states.put(e.getKey(), new DefaultKafkaStreamsState(
                        e.getKey(),
                        c.capacity(),
                        c.clientTags(),
                        c.previousActiveTasks(),
                        c.previousStandbyTasks(),
                        c.taskIdsByPreviousConsumer(),
                        Optional.empty(),
                        lags ? Optional.of(c.taskLagTotals()) : Optional.empty(),
                        Optional.empty()
                    ));
                }
                return states;
            });
        }

        @Override
        public AssignmentConfigs assignmentConfigs() {
            return configs;
        }

        @Override
        public Map<TaskId, TaskInfo> allTasks() {
            return tasks;
        }
    }

    /** A task reading one source partition and, if stateful, restoring one changelog partition. */
    private static final class OracleTaskInfo implements TaskInfo {
        private final TaskId id;
        private final boolean stateful;
        private final int rank;
        private final Set<TaskTopicPartition> partitions = new HashSet<>();

        OracleTaskInfo(final TaskId id, final boolean stateful, final int rank) {
            this.id = id;
            this.stateful = stateful;
            this.rank = rank;
            partitions.add(new DefaultTaskTopicPartition(
                new TopicPartition("subtopology-" + id.subtopology() + "-source", id.partition()), true, false, null));
            if (stateful) {
                partitions.add(new DefaultTaskTopicPartition(
                    new TopicPartition("subtopology-" + id.subtopology() + "-changelog", id.partition()), false, true, null));
            }
        }

        @Override
        public TaskId id() {
            return id;
        }

        @Override
        public boolean isStateful() {
            return stateful;
        }

        @Override
        public Set<String> stateStoreNames() {
            return stateful ? Set.of("store-" + id.subtopology()) : Set.of();
        }

        @Override
        public Set<TaskTopicPartition> topicPartitions() {
            return partitions;
        }

        @Override
        public int hashCode() {
            return rank; // see the class comment: pins the HashSet<TaskInfo> order to TaskId order
        }

        @Override
        public boolean equals(final Object o) {
            return this == o;
        }
    }
}
