"""Subscription/assignment user data: round trips, byte layout, and clear errors on bad input."""

from __future__ import annotations

import uuid

import pytest

from streamlet.assignment.protocol import AssignmentInfo, SubscriptionInfo
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

PID = uuid.UUID("7156cef1-307e-49c0-a5bb-0f11d26a4933")


def test_subscription_round_trip() -> None:
    info = SubscriptionInfo(
        process_id=PID,
        task_offset_sums={TaskId(1, 3): -2, TaskId(1, 2): 8, TaskId(1, 0): 2**63 - 1},
        prev_active=frozenset({TaskId(1, 3), TaskId(0, 1)}),
        prev_standby=frozenset({TaskId(1, 2)}),
        host_info="host-a:8080",
        unique_field=200,  # wraps into int8
    )
    decoded = SubscriptionInfo.decode(info.encode())
    assert decoded.process_id == PID
    assert dict(decoded.task_offset_sums) == dict(info.task_offset_sums)
    assert decoded.prev_active == info.prev_active and decoded.prev_standby == info.prev_standby
    assert decoded.host_info == "host-a:8080"
    assert decoded.unique_field == 200 - 256


def test_subscription_layout_starts_with_version_and_process_id() -> None:
    data = SubscriptionInfo(process_id=PID).encode()
    assert data[:2] == b"\x01\x01"
    assert data[2:18] == PID.bytes


def test_assignment_round_trip() -> None:
    info = AssignmentInfo((TaskId(0, 4), TaskId(1, 0)), (TaskId(1, 2),), next_rebalance_ms=1649652542571)
    assert AssignmentInfo.decode(info.encode()) == info


@pytest.mark.parametrize("decode", [SubscriptionInfo.decode, AssignmentInfo.decode])
def test_unknown_version_is_a_clear_error(decode) -> None:
    with pytest.raises(TaskAssignmentError, match="version 9"):
        decode(b"\x09\x09" + b"\x00" * 40)


@pytest.mark.parametrize("decode", [SubscriptionInfo.decode, AssignmentInfo.decode])
def test_empty_and_truncated_data_are_errors(decode) -> None:
    with pytest.raises(TaskAssignmentError, match="empty"):
        decode(b"")
    with pytest.raises(TaskAssignmentError, match="truncated"):
        decode(b"\x01\x01\x00")


def test_trailing_bytes_are_an_error() -> None:
    with pytest.raises(TaskAssignmentError, match="trailing"):
        AssignmentInfo.decode(AssignmentInfo().encode() + b"\x00")
