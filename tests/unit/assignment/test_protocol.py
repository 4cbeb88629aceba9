"""Subscription/assignment user data: round trips, byte layout, and clear errors on bad input."""

from __future__ import annotations

import struct
import uuid

import pytest

from streamlet.assignment.protocol import (
    ASSIGNMENT_VERSION,
    NO_FOLLOWUP,
    AssignmentInfo,
    HostTasks,
    SubscriptionInfo,
)
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
    assert data[:2] == b"\x01\x02"  # no client tags: version 1 (latest supported: 2)
    assert data[2:18] == PID.bytes


def test_a_subscription_without_tags_is_the_version_1_bytes_older_builds_read() -> None:
    """A rolling upgrade: members of the build before client tags decode version 1 only."""
    info = SubscriptionInfo(process_id=PID, host_info="h:1", unique_field=5)
    expected = b"\x01\x02" + PID.bytes + b"\x05" + b"\x00" * 4 + b"\x00\x03h:1" + b"\x00\x00\x00\x00" * 3
    assert info.encode() == expected


def test_subscription_version_2_client_tags_bytes() -> None:
    """KIP-708 tags laid out as Kafka's SubscriptionInfoData v11 `clientTags`, sorted by key."""
    info = SubscriptionInfo(process_id=PID, host_info="h:1", client_tags={"zone": "eu-1a", "az": "b"})
    expected = (
        b"\x02\x02"
        + PID.bytes
        + b"\x00"  # unique field (int8)
        + b"\x00\x00\x00\x00"  # error code
        + b"\x00\x03h:1"  # host (int16 length)
        + b"\x00\x00\x00\x00" * 3  # no previous actives, standbys, offset sums
        + b"\x00\x00\x00\x02"  # two client tags
        + b"\x00\x00\x00\x02az"
        + b"\x00\x00\x00\x01b"
        + b"\x00\x00\x00\x04zone"
        + b"\x00\x00\x00\x05eu-1a"
    )
    assert info.encode() == expected
    assert SubscriptionInfo.decode(expected).client_tags == {"az": "b", "zone": "eu-1a"}


def test_subscription_version_1_still_decodes_without_tags() -> None:
    version_1 = b"\x01\x01" + PID.bytes + b"\x05" + b"\x00" * 4 + b"\x00\x00" + b"\x00\x00\x00\x00" * 3
    decoded = SubscriptionInfo.decode(version_1)
    assert decoded.process_id == PID and decoded.unique_field == 5 and decoded.client_tags == {}
    with pytest.raises(TaskAssignmentError, match="trailing"):
        SubscriptionInfo.decode(version_1 + b"\x00\x00\x00\x00")  # tags are not part of version 1


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


def test_assignment_version_2_carries_every_hosts_tasks() -> None:
    by_host = {
        "10.0.0.1:8080": HostTasks(frozenset({TaskId(1, 0), TaskId(1, 2)}), frozenset({TaskId(1, 1)})),
        "10.0.0.2:8080": HostTasks(frozenset({TaskId(1, 1)}), frozenset()),
        "h\u00e9te:1": HostTasks(),  # non-ASCII host names survive as UTF-8
    }
    info = AssignmentInfo((TaskId(1, 0),), (TaskId(1, 1),), tasks_by_host=by_host)
    data = info.encode()
    assert data[:2] == bytes((ASSIGNMENT_VERSION, ASSIGNMENT_VERSION)) == b"\x02\x02"
    decoded = AssignmentInfo.decode(data)
    assert decoded == info
    assert dict(decoded.tasks_by_host) == by_host


def test_assignment_version_2_layout_appends_the_host_map_to_version_1() -> None:
    """Version 2 is version 1's fields followed by the host map: one int count, then host, active, standby."""
    info = AssignmentInfo((TaskId(0, 1),), (), tasks_by_host={"a:1": HostTasks(frozenset({TaskId(0, 1)}))})
    data = info.encode()
    v1_body = AssignmentInfo((TaskId(0, 1),)).encode()[2:-4]  # without the version bytes and the empty map
    assert data[2 : 2 + len(v1_body)] == v1_body
    tail = data[2 + len(v1_body) :]
    assert tail == (
        struct.pack(">i", 1) + struct.pack(">h", 3) + b"a:1" + struct.pack(">iii", 1, 0, 1) + struct.pack(">i", 0)
    )


def test_assignment_version_1_still_decodes_without_a_host_map() -> None:
    v1 = b"\x01\x01" + struct.pack(">i", 0) + struct.pack(">iii", 1, 1, 3) + struct.pack(">i", 0)
    v1 += struct.pack(">q", NO_FOLLOWUP)
    decoded = AssignmentInfo.decode(v1)
    assert decoded == AssignmentInfo(active_tasks=(TaskId(1, 3),))
    assert dict(decoded.tasks_by_host) == {}


def test_assignment_with_a_negative_host_count_is_corrupt() -> None:
    data = AssignmentInfo().encode()[:-4] + struct.pack(">i", -1)
    with pytest.raises(TaskAssignmentError, match="negative host count"):
        AssignmentInfo.decode(data)
