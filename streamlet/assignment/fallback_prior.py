"""FallbackPriorTaskAssignor: what Kafka Streams assigns with when it cannot compute lags.

Source: `org.apache.kafka.streams.processor.internals.assignment.FallbackPriorTaskAssignor` of Kafka
Streams 4.1.1. The leader uses it instead of the configured internal assignor when it failed to fetch the
changelogs' end offsets (`StreamsPartitionAssignor.createTaskAssignor(lagComputationSuccessful=false)`),
so no assignor can tell caught-up clients from lagging ones. It then

* runs `LegacyStickyTaskAssignor(mustPreserveActiveTaskAssignment = true)` with rack awareness off:
  every previous active stays where it was, whatever the quota (no state moves while lags are unknown),
  other tasks and standbys are placed the legacy sticky way (`legacy_sticky.py`);
* always answers "probing rebalance needed", so the leader schedules a follow-up rebalance after
  `probing.rebalance.interval.ms` (not an immediate one) to retry with lags.

Lags are not read. It is not used when a KIP-924 `task.assignor.class` is configured, nor with the
legacy sticky assignor, which runs whether lags were computed or not.
"""

from __future__ import annotations

from streamlet.assignment.api import ApplicationState, TaskAssignment
from streamlet.assignment.legacy_sticky import assign_legacy_sticky


class FallbackPriorTaskAssignor:
    """Keep the prior assignment, place the rest sticky, and always ask for a follow-up rebalance."""

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        return assign_legacy_sticky(application_state, must_preserve_active_task_assignment=True, probing=True)
