"""The KIP-924-shaped API: validation order, states, standby utility, follow-up deadline placement."""

from __future__ import annotations

import uuid

import pytest

from streamlet.assignment.api import (
    ApplicationState,
    AssignedTask,
    AssignmentConfigs,
    AssignmentError,
    KafkaStreamsAssignment,
    TaskAssignment,
    TaskAssignor,
    TaskInfo,
    TaskType,
    default_standby_task_assignment,
    identity_assignment,
    validate_task_assignment,
)
from streamlet.assignment.client_state import LATEST_OFFSET, ClientState
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError, TaskAssignmentError
from streamlet.task_id import TaskId

P1, P2, P3 = (uuid.UUID(int=n) for n in (1, 2, 3))
STATELESS, STATEFUL, UNKNOWN = TaskId(0, 0), TaskId(1, 0), TaskId(9, 9)


def _state(*pids: uuid.UUID, now_ms: int = 0, leader: uuid.UUID | None = None) -> ApplicationState:
    clients = {}
    for pid in pids:
        client = ClientState()
        client.add_consumer(f"{pid}-1", {STATEFUL: LATEST_OFFSET} if pid == P1 else {})
        client.initialize_prev_tasks({})
        client.compute_task_lags({STATEFUL: 10})
        clients[pid] = client
    infos = [TaskInfo(STATELESS, False), TaskInfo(STATEFUL, True)]
    return ApplicationState(infos, AssignmentConfigs(), clients, now_ms=now_ms, leader_process_id=leader)


def _ksa(pid: uuid.UUID, *tasks: tuple[TaskId, TaskType]) -> KafkaStreamsAssignment:
    return KafkaStreamsAssignment.of(pid, [AssignedTask(t, k) for t, k in tasks])


A, S = TaskType.ACTIVE, TaskType.STANDBY


@pytest.mark.parametrize(
    ("assignments", "error"),
    [
        ([_ksa(P1, (STATELESS, A), (STATEFUL, A)), _ksa(P2, (STATEFUL, S))], AssignmentError.NONE),
        ([_ksa(P1, (UNKNOWN, A)), _ksa(P2)], AssignmentError.UNKNOWN_TASK_ID),
        ([_ksa(P1, (STATEFUL, A)), _ksa(P2, (STATEFUL, A))], AssignmentError.ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES),
        ([_ksa(P1, (STATELESS, A)), _ksa(P2, (STATELESS, S))], AssignmentError.INVALID_STANDBY_TASK),
        ([_ksa(P1, (STATELESS, A))], AssignmentError.MISSING_PROCESS_ID),
        ([_ksa(P1), _ksa(P2), _ksa(P3)], AssignmentError.UNKNOWN_PROCESS_ID),
        # order of checks: unknown task before a missing client; stateless standby before a missing client;
        # missing client before an unknown one
        ([_ksa(P1, (UNKNOWN, S))], AssignmentError.UNKNOWN_TASK_ID),
        ([_ksa(P1, (STATELESS, S))], AssignmentError.INVALID_STANDBY_TASK),
        ([_ksa(P1), _ksa(P3)], AssignmentError.MISSING_PROCESS_ID),
        (
            [_ksa(P1, (STATEFUL, A)), _ksa(P2, (STATEFUL, A), (UNKNOWN, A))],
            AssignmentError.ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES,
        ),
    ],
)
def test_validate_task_assignment(assignments: list[KafkaStreamsAssignment], error: AssignmentError) -> None:
    assert validate_task_assignment(_state(P1, P2), TaskAssignment(assignments)) is error


def test_kafka_streams_states_without_lags_refuse_lag_queries() -> None:
    state = _state(P2, P1)
    assert list(state.kafka_streams_states(True)) == [P1, P2]
    no_lags = state.kafka_streams_states(False)[P1]
    assert no_lags.previous_active_tasks == (STATEFUL,)
    assert no_lags.consumer_client_ids == (f"{P1}-1",)
    with pytest.raises(TaskAssignmentError, match="compute_task_lags=True"):
        no_lags.lag_for(STATEFUL)
    with_lags = state.kafka_streams_states(True)[P1]
    assert with_lags.lag_for(STATEFUL) == LATEST_OFFSET
    assert with_lags.prev_tasks_by_lag(f"{P1}-1") == [STATEFUL]
    assert state.kafka_streams_states(True)[P2].stateful_tasks_to_lag_sums() == {STATEFUL: 10}


def test_identity_and_default_standby_assignment() -> None:
    state = _state(P1, P2, P3)
    identity = identity_assignment(state)
    assert identity[P1].active_tasks() == [STATEFUL] and identity[P2].tasks == {}

    configs = AssignmentConfigs(num_standby_replicas=2)
    state = ApplicationState(state.all_tasks, configs, {p: ClientState(1) for p in (P1, P2, P3)})
    assignments = {P2: _ksa(P2, (STATEFUL, A))}
    default_standby_task_assignment(state, assignments)
    assert set(assignments) == {P1, P2, P3}
    assert assignments[P1].standby_tasks() == [STATEFUL] and assignments[P3].standby_tasks() == [STATEFUL]
    assert all(STATELESS not in a.tasks for a in assignments.values())


def test_probing_deadline_goes_to_the_leader_only_when_one_is_named() -> None:
    # 1_0's round-robin target P1 lags (500 > 100) while P2 is caught up: a movement, so probing is needed
    infos = [TaskInfo(TaskId(1, p), True) for p in range(2)]
    clients = {pid: ClientState(1, task_lags={TaskId(1, 0): 0, TaskId(1, 1): 0}) for pid in (P1, P2)}
    clients[P1].task_lags[TaskId(1, 0)] = 500
    configs = AssignmentConfigs(acceptable_recovery_lag=100)  # probing interval: default 600_000
    deadline = 1_000 + 600_000
    for leader, expected in ((None, {P1: deadline, P2: deadline}), (P2, {P1: None, P2: deadline})):
        state = ApplicationState(infos, configs, clients, now_ms=1_000, leader_process_id=leader)
        result = HighAvailabilityTaskAssignor().assign(state)
        assert {a.process_id: a.followup_rebalance_deadline for a in result.assignment} == expected
        by_pid = result.by_process_id()
        assert by_pid[P2].active_tasks() == [TaskId(1, 0), TaskId(1, 1)]
        assert by_pid[P1].standby_tasks() == [TaskId(1, 0)]  # the warmup on the round-robin target


def test_assignor_protocol_and_configs() -> None:
    assert isinstance(HighAvailabilityTaskAssignor(), TaskAssignor)
    assert AssignmentConfigs() == AssignmentConfigs(0, 2, 10_000, 600_000)
    config = StreamsConfig(application_id="app", num_standby_replicas=1, acceptable_recovery_lag=5)
    assert AssignmentConfigs.from_streams_config(config) == AssignmentConfigs(1, 2, 5, 600_000)
    with pytest.raises(ConfigError, match="max_warmup_replicas"):
        AssignmentConfigs(max_warmup_replicas=-1)
    with pytest.raises(ConfigError, match="acceptable_recovery_lag"):
        AssignmentConfigs(acceptable_recovery_lag=2**63)
