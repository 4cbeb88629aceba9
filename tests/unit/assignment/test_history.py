"""The assignment-history event: built from the leader's ClientStates and the assignor's result (no broker)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from streamlet.assignment.api import AssignedTask, AssignmentConfigs, KafkaStreamsAssignment, TaskType
from streamlet.assignment.client_state import LATEST_OFFSET, ClientState
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor
from streamlet.assignment.history import (
    HISTORY_VERSION,
    ThreadTasks,
    assignment_history_topic,
    build_assignment_event,
    classify_warmups,
    infer_trigger,
)
from streamlet.assignment.partition_assignor import StreamsPartitionAssignor
from streamlet.assignment.protocol import SubscriptionInfo
from streamlet.kafka.group.consumer_protocol import Subscription
from streamlet.task_id import TaskId
from tests.unit.assignment.test_partition_assignor import COUNTS, _Host, _Topology

A = uuid.UUID("4b61083e-57d0-457d-951f-d06556c148ca")
B = uuid.UUID("7156cef1-307e-49c0-a5bb-0f11d26a4933")
C = uuid.UUID("bbb83e43-b1af-4b2d-a60a-94a7091684d0")
T10, T11 = TaskId(1, 0), TaskId(1, 1)


def _client(capacity: int, lags: Mapping[TaskId, int], prev_active: tuple[TaskId, ...] = ()) -> ClientState:
    return ClientState(capacity, task_lags=lags, previous_active_tasks=prev_active)


def _ka(pid: uuid.UUID, active: list[TaskId], standby: list[TaskId], deadline: int | None = None):
    tasks = [AssignedTask(t, TaskType.ACTIVE) for t in active] + [AssignedTask(t, TaskType.STANDBY) for t in standby]
    return KafkaStreamsAssignment(pid, tasks, deadline)


def _event(previous: Mapping[str, Any] | None = None, now: int = 1_000) -> dict[str, Any]:
    clients = {
        A: _client(2, {T10: LATEST_OFFSET, T11: 500}, (T10,)),
        B: _client(2, {T10: 700, T11: LATEST_OFFSET}, (T11,)),
        C: _client(2, {T10: 900, T11: 900}),
    }
    assignment = {A: _ka(A, [T10], []), B: _ka(B, [T11], [], 6_000), C: _ka(C, [], [T10, T11])}
    return build_assignment_event(
        application_id="wc",
        generation=7,
        timestamp_ms=now,
        assignor="high_availability",
        leader_process_id=A,
        leader_thread="wc-A-StreamThread-1",
        configs=AssignmentConfigs(num_standby_replicas=0, acceptable_recovery_lag=0),
        all_tasks=[T11, T10, TaskId(0, 0)],
        stateful_tasks=[T10, T11],
        clients=clients,
        host_infos={A: "a:1"},
        assignment=assignment,
        threads={A: [ThreadTasks("m1", [T10], []), ThreadTasks("m2", [], [])]},
        previous=previous,
    )


def test_event_holds_every_client_in_java_uuid_order_with_lags_warmups_and_followup() -> None:
    event = _event()
    assert json.loads(json.dumps(event)) == event  # JSON-ready as is
    assert (event["version"], event["generation"], event["assignor"]) == (HISTORY_VERSION, 7, "high_availability")
    assert event["tasks"] == ["0_0", "1_0", "1_1"] and event["stateful_tasks"] == ["1_0", "1_1"]
    assert [c["process_id"] for c in event["clients"]] == [str(C), str(A), str(B)]  # bbb8... sorts first in Java
    by_pid = {c["process_id"]: c for c in event["clients"]}
    # no standby replicas configured: every standby is a warmup
    assert by_pid[str(C)]["warmup"] == ["1_0", "1_1"] and by_pid[str(C)]["standby"] == []
    assert by_pid[str(A)]["lags"] == {"1_0": LATEST_OFFSET, "1_1": 500}
    assert by_pid[str(A)]["threads"] == [
        {"member_id": "m1", "active": ["1_0"], "standby": [], "pending_revocation": []},
        {"member_id": "m2", "active": [], "standby": [], "pending_revocation": []},
    ]
    assert by_pid[str(A)]["host"] == "a:1" and by_pid[str(A)]["capacity"] == 2
    assert by_pid[str(B)]["followup_deadline_ms"] == 6_000
    assert event["followup_scheduled"] is True and event["followup_deadline_ms"] == 6_000
    assert event["trigger"] == "join" and event["joined"] == [str(C)]  # no previous event: C reports nothing


def test_standbys_within_num_standby_replicas_are_not_warmups() -> None:
    configs = AssignmentConfigs(num_standby_replicas=1, acceptable_recovery_lag=10)
    clients = {A: _client(1, {T10: 5}), B: _client(1, {T10: 400}), C: _client(1, {T10: LATEST_OFFSET})}
    warmups = classify_warmups(clients, {A: [T10], B: [T10], C: []}, configs)
    assert warmups == {A: set(), B: {T10}, C: set()}  # B is the lagging extra copy


def test_trigger_is_inferred_from_the_previous_event() -> None:
    first = _event()
    clients = {A: _client(2, {}), B: _client(2, {}), C: _client(2, {})}
    assert infer_trigger(first, clients, 5_999)[0] == "metadata"
    assert infer_trigger(first, clients, 6_000)[0] == "probing"
    pending = [{**first["clients"][0], "threads": [{"pending_revocation": ["1_0"]}]}, *first["clients"][1:]]
    withheld = {**first, "clients": pending}
    assert infer_trigger(withheld, clients, 5_999)[0] == "revocation"  # the cooperative follow-up round
    assert infer_trigger(first, {A: _client(2, {}), B: _client(2, {})}, 7_000) == ("leave", [], [str(C)])
    more_threads = {A: _client(3, {}), B: _client(2, {}), C: _client(2, {})}
    assert infer_trigger(first, more_threads, 7_000)[0] == "join"
    assert infer_trigger(None, {A: _client(1, {}, (T10,))}, 0)[0] == "unknown"
    assert assignment_history_topic("wc") == "wc-assignments"


def test_a_previous_event_from_an_older_generation_is_not_trusted() -> None:
    """Leadership moved and came back: this client's last event is not the round before, so it is ignored."""
    stale = {**_event(), "generation": 3}
    assert _event(previous={**stale, "generation": 6})["trigger"] == "metadata"  # 6 -> 7, all known, no follow-up
    assert _event(previous=stale)["trigger"] == "join"  # 3 -> 7: as if there were no previous event


class _Recorder:
    application_id = "app"
    assignor_name = "high_availability"

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._generation = 2

    def previous_event(self) -> Mapping[str, Any] | None:
        return self.events[-1] if self.events else None

    def generation(self) -> int | None:
        self._generation += 1
        return self._generation

    def record(self, event: dict[str, Any]) -> None:
        self.events.append(event)


async def test_the_leaders_assignor_records_one_event_per_rebalance_matching_what_members_are_sent() -> None:
    recorder = _Recorder()
    assignor = StreamsPartitionAssignor(
        _Host(), _Topology(), HighAvailabilityTaskAssignor(), AssignmentConfigs(), recorder
    )
    pid = _Host.process_id
    members = {m: Subscription(("in",), SubscriptionInfo(pid).encode()) for m in ("c1", "c2")}
    await assignor.assign(COUNTS, members)
    await assignor.assign(COUNTS, members)
    assert [e["generation"] for e in recorder.events] == [3, 4]
    assert [e["trigger"] for e in recorder.events] == ["join", "metadata"]
    (client,) = recorder.events[-1]["clients"]
    assert client["capacity"] == 2 and client["active"] == ["0_0", "0_1"]
    assert [(t["member_id"], t["active"]) for t in client["threads"]] == [("c1", ["0_0"]), ("c2", ["0_1"])]


async def test_a_failing_recorder_never_fails_the_rebalance() -> None:
    class Broken(_Recorder):
        def record(self, event: dict[str, Any]) -> None:
            raise RuntimeError("broker down")

    assignor = StreamsPartitionAssignor(
        _Host(), _Topology(), HighAvailabilityTaskAssignor(), AssignmentConfigs(), Broken()
    )
    members = {"c1": Subscription(("in",), SubscriptionInfo(_Host.process_id).encode())}
    assert set(await assignor.assign(COUNTS, members)) == {"c1"}
