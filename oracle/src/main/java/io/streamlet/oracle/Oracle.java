package io.streamlet.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.internals.assignment.ClientState;
import org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor;
import org.apache.kafka.streams.processor.internals.assignment.RackAwareTaskAssignor;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

/**
 * Differential oracle for streamlet's assignors: runs Kafka Streams' own
 * {@link HighAvailabilityTaskAssignor} (or, by the case's {@code "assignor"} field, the sticky
 * assignors of {@link OtherAssignors}) on cases in the "assignor simulation contract" format
 * (ARCHITECTURE.md).
 *
 * <p>Protocol: one JSON case per line on stdin, one JSON result per line on stdout, flushed after
 * each line. Blank lines are ignored. A case that fails yields {@code {"error": "..."}} on its
 * line; the process keeps going. Nothing else is ever written to stdout (System.out is pointed at
 * stderr, and logging goes to slf4j-nop).
 *
 * <p>The leader-side steps of {@code StreamsPartitionAssignor} that matter for the assignor are
 * reproduced with the real classes: {@code new ClientState(processId, clientTags)},
 * {@code incrementCapacity()} + {@code addOwnedPartitions(...)} per consumer,
 * {@code addPreviousTasksAndOffsetSums(...)}, {@code initializePrevTasks(...)},
 * {@code computeTaskLags(processId, endOffsetSums)}, then
 * {@code HighAvailabilityTaskAssignor.assign(clients, allTasks, statefulTasks, rackAwareTaskAssignor, configs)}
 * with the case's KIP-708 tags and KIP-925 strategy (see {@link RackAware} for the rack inputs).
 */
public final class Oracle {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final long DEFAULT_ACCEPTABLE_RECOVERY_LAG = 10_000L;
    private static final int DEFAULT_MAX_WARMUP_REPLICAS = 2;
    private static final int DEFAULT_NUM_STANDBY_REPLICAS = 0;
    private static final long DEFAULT_PROBING_REBALANCE_INTERVAL_MS = 600_000L;

    private Oracle() {
    }

    public static void main(final String[] args) throws Exception {
        // Keep stdout for result lines only: anything printed by library code goes to stderr.
        final PrintWriter out = new PrintWriter(new OutputStreamWriter(
            new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8), false);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8));

        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String result;
            try {
                result = MAPPER.writeValueAsString(runCase(MAPPER.readTree(line)));
            } catch (final Throwable e) {
                final ObjectNode err = MAPPER.createObjectNode();
                err.put("error", e.getClass().getName() + ": " + e.getMessage());
                result = MAPPER.writeValueAsString(err);
            }
            out.println(result);
            out.flush();
        }
        out.flush();
    }

    /** Runs one contract case through the real assignor and returns the contract output. */
    static ObjectNode runCase(final JsonNode root) {
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("case must be a JSON object");
        }
        final JsonNode config = root.path("config");
        final long acceptableRecoveryLag = longOr(config, "acceptable_recovery_lag", DEFAULT_ACCEPTABLE_RECOVERY_LAG);
        final int maxWarmupReplicas = (int) longOr(config, "max_warmup_replicas", DEFAULT_MAX_WARMUP_REPLICAS);
        final int numStandbyReplicas = (int) longOr(config, "num_standby_replicas", DEFAULT_NUM_STANDBY_REPLICAS);
        final long probingRebalanceIntervalMs =
            longOr(config, "probing_rebalance_interval_ms", DEFAULT_PROBING_REBALANCE_INTERVAL_MS);

        // KIP-708: rack.aware.assignment.tags, a list of client tag keys (default: none).
        final List<String> rackAwareAssignmentTags = new ArrayList<>();
        for (final JsonNode tag : config.path("rack_aware_assignment_tags")) {
            rackAwareAssignmentTags.add(tag.asText());
        }

        // KIP-925: rack.aware.assignment.strategy and its two costs (unset: the assignor's defaults).
        final String strategy = config.path("rack_aware_assignment_strategy").asText(StreamsConfig.RACK_AWARE_ASSIGNMENT_STRATEGY_NONE);
        final OptionalInt trafficCost = optionalInt(config, "rack_aware_assignment_traffic_cost");
        final OptionalInt nonOverlapCost = optionalInt(config, "rack_aware_assignment_non_overlap_cost");

        // Same validation as StreamsConfig.
        final AssignmentConfigs configs = new AssignmentConfigs(
            acceptableRecoveryLag,
            maxWarmupReplicas,
            numStandbyReplicas,
            probingRebalanceIntervalMs,
            rackAwareAssignmentTags,
            trafficCost,
            nonOverlapCost,
            strategy
        );

        // Tasks.
        final JsonNode tasks = root.path("tasks");
        final Set<TaskId> statelessTasks = parseTaskList(tasks.path("stateless"), "tasks.stateless");
        final Set<TaskId> statefulTasks = parseTaskList(tasks.path("stateful"), "tasks.stateful");
        for (final TaskId t : statefulTasks) {
            if (statelessTasks.contains(t)) {
                throw new IllegalArgumentException("task " + t + " is both stateless and stateful");
            }
        }
        final Set<TaskId> allTasks = new HashSet<>(statelessTasks);
        allTasks.addAll(statefulTasks);

        // Synthetic partition -> task mapping (one source partition per task), used only to turn
        // prev_active into the consumer's ownedPartitions as the real leader would see them.
        final Map<TopicPartition, TaskId> taskForPartition = new HashMap<>();
        final Map<TaskId, TopicPartition> partitionForTask = new HashMap<>();
        for (final TaskId t : allTasks) {
            final TopicPartition tp = new TopicPartition("subtopology-" + t.subtopology() + "-source", t.partition());
            taskForPartition.put(tp, t);
            partitionForTask.put(t, tp);
        }

        // End-offset sums, as computeEndOffsetSumsByTask yields them: one entry per stateful task.
        final Map<TaskId, Long> endOffsetSums = new HashMap<>();
        final JsonNode ends = root.path("changelog_end_offset_sums");
        if (!ends.isMissingNode() && !ends.isNull()) {
            if (!ends.isObject()) {
                throw new IllegalArgumentException("changelog_end_offset_sums must be an object");
            }
            final Iterator<Map.Entry<String, JsonNode>> it = ends.fields();
            while (it.hasNext()) {
                final Map.Entry<String, JsonNode> e = it.next();
                endOffsetSums.put(parseTask(e.getKey()), asLong(e.getValue(), "changelog_end_offset_sums." + e.getKey()));
            }
        }
        for (final TaskId t : statefulTasks) {
            if (!endOffsetSums.containsKey(t)) {
                throw new IllegalArgumentException("changelog_end_offset_sums has no entry for stateful task " + t);
            }
        }

        // Clients.
        final JsonNode clientsNode = root.path("clients");
        if (!clientsNode.isObject() || clientsNode.isEmpty()) {
            throw new IllegalArgumentException("clients must be a non-empty object");
        }
        final Map<ProcessId, ClientState> clientStates = new HashMap<>();
        final Map<ProcessId, String> keyForProcess = new HashMap<>();
        final Map<ProcessId, Integer> capacityForProcess = new HashMap<>();
        final Iterator<Map.Entry<String, JsonNode>> clientIt = clientsNode.fields();
        while (clientIt.hasNext()) {
            final Map.Entry<String, JsonNode> entry = clientIt.next();
            final String key = entry.getKey();
            final JsonNode c = entry.getValue();
            final ProcessId processId = new ProcessId(UUID.fromString(key));
            if (keyForProcess.put(processId, key) != null) {
                throw new IllegalArgumentException("duplicate client " + key);
            }
            final long capacity = c.has("capacity") ? asLong(c.get("capacity"), key + ".capacity") : 1L;
            if (capacity < 1 || capacity > 10_000) {
                throw new IllegalArgumentException("client " + key + ": capacity must be >= 1, got " + capacity);
            }

            final Set<TaskId> prevActive = parseTaskList(c.path("prev_active"), key + ".prev_active");
            parseTaskList(c.path("prev_standby"), key + ".prev_standby"); // validated; HATA does not read it

            final Map<TaskId, Long> offsetSums = new TreeMap<>();
            final JsonNode sums = c.path("task_offset_sums");
            if (!sums.isMissingNode() && !sums.isNull()) {
                if (!sums.isObject()) {
                    throw new IllegalArgumentException(key + ".task_offset_sums must be an object");
                }
                final Iterator<Map.Entry<String, JsonNode>> it = sums.fields();
                while (it.hasNext()) {
                    final Map.Entry<String, JsonNode> e = it.next();
                    offsetSums.put(parseTask(e.getKey()), asLong(e.getValue(), key + ".task_offset_sums." + e.getKey()));
                }
            }

            // As ClientMetadata does: one consumer per stream thread. The first consumer carries the
            // client's owned partitions and reported offset sums (the leader takes their union anyway).
            // KIP-708: the client's tags, as ClientMetadata gets them from its SubscriptionInfo.
            final Map<String, String> clientTags = new HashMap<>();
            final Iterator<Map.Entry<String, JsonNode>> tagIt = c.path("client_tags").fields();
            while (tagIt.hasNext()) {
                final Map.Entry<String, JsonNode> e = tagIt.next();
                clientTags.put(e.getKey(), e.getValue().asText());
            }
            capacityForProcess.put(processId, (int) capacity);
            final ClientState state = new ClientState(processId, clientTags);
            final List<TopicPartition> owned = new ArrayList<>();
            for (final TaskId t : prevActive) {
                final TopicPartition tp = partitionForTask.get(t);
                if (tp == null) {
                    throw new IllegalArgumentException(key + ".prev_active has unknown task " + t);
                }
                owned.add(tp);
            }
            for (int i = 0; i < capacity; i++) {
                final String consumerId = String.format("%s-StreamThread-%d-consumer", key, i + 1);
                state.incrementCapacity();
                state.addOwnedPartitions(i == 0 ? owned : Collections.emptyList(), consumerId);
                state.addPreviousTasksAndOffsetSums(consumerId, i == 0 ? offsetSums : Collections.emptyMap());
            }
            state.initializePrevTasks(taskForPartition, false);
            state.computeTaskLags(processId, endOffsetSums);
            clientStates.put(processId, state);
        }

        // Strategy "none": canEnableRackAwareAssignor() is false at once, whatever the metadata.
        final RackAwareTaskAssignor rackAwareTaskAssignor = RackAware.create(
            root, allTasks, keyForProcess, capacityForProcess, configs);

        final String assignor = root.path("assignor").asText("high_availability");
        final ObjectNode result = MAPPER.createObjectNode();
        final ObjectNode clientsOut = result.putObject("clients");
        if ("sticky".equals(assignor)) {
            // The KIP-924 assignor reads an ApplicationState; it answers with per-client assignments.
            final Map<ProcessId, KafkaStreamsAssignment> assignments = OtherAssignors.runSticky(
                new TreeMap<>(clientStates), statelessTasks, statefulTasks, configs,
                root.path("must_preserve_active_task_assignment").asBoolean(false));
            Long followup = null;
            for (final Map.Entry<ProcessId, KafkaStreamsAssignment> e : new TreeMap<>(assignments).entrySet()) {
                final ObjectNode c = clientsOut.putObject(keyForProcess.get(e.getKey()));
                final Set<TaskId> active = new TreeSet<>();
                final Set<TaskId> standby = new TreeSet<>();
                for (final KafkaStreamsAssignment.AssignedTask t : e.getValue().tasks().values()) {
                    (t.type() == KafkaStreamsAssignment.AssignedTask.Type.ACTIVE ? active : standby).add(t.id());
                }
                writeTasks(c.putArray("active"), active);
                writeTasks(c.putArray("standby"), standby);
                if (e.getValue().followupRebalanceDeadline().isPresent()) {
                    final long at = e.getValue().followupRebalanceDeadline().get().toEpochMilli(); // now = 0
                    followup = followup == null ? at : Math.min(followup, at);
                }
            }
            if (followup == null) {
                result.putNull("followup_rebalance_ms");
            } else {
                result.put("followup_rebalance_ms", followup);
            }
            return result;
        }

        final boolean probingRebalanceNeeded;
        if ("high_availability".equals(assignor)) {
            probingRebalanceNeeded = new HighAvailabilityTaskAssignor().assign(
                clientStates,
                allTasks,
                statefulTasks,
                rackAwareTaskAssignor,
                configs
            );
        } else if ("legacy_sticky".equals(assignor) || "fallback_prior".equals(assignor)) {
            probingRebalanceNeeded = OtherAssignors.runLegacy(
                assignor, new TreeMap<>(clientStates), statelessTasks, statefulTasks, rackAwareTaskAssignor, configs);
        } else {
            throw new IllegalArgumentException("unknown assignor '" + assignor
                + "' (expected high_availability, sticky, legacy_sticky or fallback_prior)");
        }

        for (final Map.Entry<ProcessId, ClientState> e : new TreeMap<>(clientStates).entrySet()) {
            final ObjectNode c = clientsOut.putObject(keyForProcess.get(e.getKey()));
            writeTasks(c.putArray("active"), e.getValue().activeTasks());
            writeTasks(c.putArray("standby"), e.getValue().standbyTasks());
        }
        if (probingRebalanceNeeded) {
            result.put("followup_rebalance_ms", configs.probingRebalanceIntervalMs());
        } else {
            result.putNull("followup_rebalance_ms");
        }
        if (root.path("_debug").asBoolean(false)) {
            final ObjectNode lags = result.putObject("_lags");
            for (final Map.Entry<ProcessId, ClientState> e : new TreeMap<>(clientStates).entrySet()) {
                final ObjectNode l = lags.putObject(keyForProcess.get(e.getKey()));
                for (final Map.Entry<TaskId, Long> lag : new TreeMap<>(e.getValue().taskLagTotals()).entrySet()) {
                    l.put(lag.getKey().toString(), lag.getValue());
                }
            }
        }
        return result;
    }

    static void writeTasks(final ArrayNode array, final Set<TaskId> tasks) {
        for (final TaskId t : new TreeSet<>(tasks)) {
            array.add(t.toString());
        }
    }

    private static Set<TaskId> parseTaskList(final JsonNode node, final String what) {
        final Set<TaskId> result = new TreeSet<>();
        if (node.isMissingNode() || node.isNull()) {
            return result;
        }
        if (!node.isArray()) {
            throw new IllegalArgumentException(what + " must be an array");
        }
        for (final JsonNode n : node) {
            if (!n.isTextual()) {
                throw new IllegalArgumentException(what + " must hold task id strings, got " + n);
            }
            if (!result.add(parseTask(n.asText()))) {
                throw new IllegalArgumentException(what + " lists " + n.asText() + " twice");
            }
        }
        return result;
    }

    private static TaskId parseTask(final String s) {
        final TaskId t = TaskId.parse(s);
        if (t.topologyName() != null || !t.toString().equals(s)) {
            throw new IllegalArgumentException("unsupported task id '" + s + "' (expected <subtopology>_<partition>)");
        }
        return t;
    }

    private static OptionalInt optionalInt(final JsonNode parent, final String field) {
        final JsonNode n = parent.path(field);
        if (n.isMissingNode() || n.isNull()) {
            return OptionalInt.empty();
        }
        return OptionalInt.of(Math.toIntExact(asLong(n, field)));
    }

    private static long longOr(final JsonNode parent, final String field, final long dflt) {
        final JsonNode n = parent.path(field);
        if (n.isMissingNode() || n.isNull()) {
            return dflt;
        }
        return asLong(n, field);
    }

    private static long asLong(final JsonNode n, final String what) {
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong()) {
            throw new IllegalArgumentException(what + " must be a 64-bit integer, got " + n);
        }
        return n.asLong();
    }
}
