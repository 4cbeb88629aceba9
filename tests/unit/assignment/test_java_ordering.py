"""Java ordering and collection emulation. Expected values were printed by JDK 17 (java.util.UUID,
PriorityQueue, HashSet) with Kafka Streams' TaskId, recorded here as literals."""

from __future__ import annotations

import random
import uuid

import pytest

from streamlet.assignment.constrained_priority_set import ConstrainedPrioritySet
from streamlet.assignment.java_collections import (
    JavaPriorityQueue,
    _order_by_replaying_insertions,
    _order_without_treeify_resize,
    java_hash_set_copy_capacity,
    java_hash_set_copy_order,
    java_hash_set_order,
)
from streamlet.assignment.process_id import java_uuid_hash_code, java_uuid_key, sorted_process_ids
from streamlet.task_id import TaskId

UUIDS = [
    "80000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "00000000-0000-0000-8000-000000000000",
    "00000000-0000-0000-0000-000000000001",
    "7fffffff-ffff-ffff-ffff-ffffffffffff",
    "4b61083e-57d0-457d-951f-d06556c148ca",
    "bbb83e43-b1af-4b2d-a60a-94a7091684d0",
    "00000000-0000-0000-ffff-ffffffffffff",
]
# Collections.sort(List<UUID>) on JDK 17
JAVA_SORTED = [
    "80000000-0000-0000-0000-000000000000",
    "bbb83e43-b1af-4b2d-a60a-94a7091684d0",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "00000000-0000-0000-8000-000000000000",
    "00000000-0000-0000-ffff-ffffffffffff",
    "00000000-0000-0000-0000-000000000001",
    "4b61083e-57d0-457d-951f-d06556c148ca",
    "7fffffff-ffff-ffff-ffff-ffffffffffff",
]
# UUID.hashCode() on JDK 17
JAVA_HASH = [-2147483648, 0, -2147483648, 1, -2147483648, -546318868, -1525979879, 0]
# new HashSet<>(sorted list).toString() on JDK 17
JAVA_HASHSET = [
    "80000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "00000000-0000-0000-8000-000000000000",
    "00000000-0000-0000-ffff-ffffffffffff",
    "7fffffff-ffff-ffff-ffff-ffffffffffff",
    "00000000-0000-0000-0000-000000000001",
    "bbb83e43-b1af-4b2d-a60a-94a7091684d0",
    "4b61083e-57d0-457d-951f-d06556c148ca",
]


def test_spec_example_order_is_signed() -> None:
    """§2.2: 80000000-… < ffffffff-… < 00000000-0000-0000-8000-… < 00000000-…-0001 < 7fffffff-…"""
    example = [UUIDS[i] for i in (0, 1, 2, 3, 4)]
    shuffled = [uuid.UUID(u) for u in reversed(example)]
    assert [str(u) for u in sorted_process_ids(shuffled)] == example
    assert sorted(shuffled) != sorted_process_ids(shuffled)  # Python's unsigned order differs


def test_uuid_order_matches_java_sort() -> None:
    assert [str(u) for u in sorted((uuid.UUID(u) for u in UUIDS), key=java_uuid_key)] == JAVA_SORTED


def test_uuid_hash_code_and_hash_set_order_match_java() -> None:
    assert [java_uuid_hash_code(uuid.UUID(u)) for u in UUIDS] == JAVA_HASH
    order = java_hash_set_order([uuid.UUID(u) for u in JAVA_SORTED], java_uuid_hash_code)
    assert [str(u) for u in order] == JAVA_HASHSET


def test_priority_queue_heapify_remove_offer_poll_match_java() -> None:
    pq = JavaPriorityQueue.from_collection([5, 3, 4, 1, 2, 9, 7, 8, 6, 0])
    assert list(pq) == [0, 1, 4, 5, 2, 9, 7, 8, 6, 3]
    pq.remove(1)
    assert list(pq) == [0, 2, 4, 5, 3, 9, 7, 8, 6]
    pq.remove(7)
    assert list(pq) == [0, 2, 4, 5, 3, 9, 6, 8]
    pq.offer(-1)
    assert list(pq) == [-1, 0, 4, 2, 3, 9, 6, 8, 5]
    polled = []
    while pq:
        polled.append(pq.poll())
    assert polled == [-1, 0, 2, 3, 4, 5, 6, 8, 9]
    assert pq.poll() is None


def test_priority_queue_breaks_ties_by_heap_position_like_java() -> None:
    pq: JavaPriorityQueue[str] = JavaPriorityQueue(key=len)
    for s in "abcde":
        pq.offer(s)
    assert [pq.poll() for _ in range(5)] == ["a", "e", "d", "c", "b"]


def _tasks(text: str) -> list[TaskId]:
    return [TaskId.parse(t.strip()) for t in text.split(",")]


def test_task_id_hash_set_and_priority_queue_order_match_java() -> None:
    cases = [
        (
            [TaskId(s, p) for s in range(3) for p in range(10)],
            "2_1, 0_8, 1_8, 0_6, 2_8, 1_6, 0_4, 2_6, 1_4, 0_2, 2_4, 1_2, 0_0, 2_2, 1_0, 2_0, 0_9, 1_9, 0_7, 2_9, "
            "1_7, 0_5, 2_7, 1_5, 0_3, 2_5, 1_3, 0_1, 2_3, 1_1",
            "0_0, 0_2, 0_1, 0_6, 0_5, 0_3, 0_4, 0_9, 0_7, 1_7, 0_8, 1_2, 1_3, 2_1, 1_0, 2_0, 2_6, 1_9, 1_4, 2_9, "
            "2_8, 2_4, 2_7, 1_5, 1_8, 2_5, 1_6, 2_2, 2_3, 1_1",
        ),
        (  # 12 entries in one bucket of 16: the 9th resizes instead of treeifying
            [TaskId(k, k) for k in range(12)],
            "0_0, 2_2, 4_4, 6_6, 8_8, 10_10, 1_1, 3_3, 5_5, 7_7, 9_9, 11_11",
            "0_0, 2_2, 1_1, 3_3, 7_7, 10_10, 4_4, 6_6, 5_5, 8_8, 9_9, 11_11",
        ),
        (
            [TaskId(k, k) for k in range(10)] + [TaskId(20, p) for p in range(5)],
            "20_3, 20_1, 0_0, 2_2, 4_4, 6_6, 8_8, 20_4, 20_2, 20_0, 1_1, 3_3, 5_5, 7_7, 9_9",
            "0_0, 1_1, 3_3, 2_2, 4_4, 5_5, 7_7, 20_4, 20_2, 20_0, 20_1, 6_6, 20_3, 8_8, 9_9",
        ),
    ]
    for tasks, java_set, java_pq in cases:
        order = java_hash_set_order(sorted(tasks), TaskId.java_hash_code)
        assert order == _tasks(java_set)
        assert list(JavaPriorityQueue.from_collection(order)) == _tasks(java_pq)


def test_hash_set_copy_constructor_order_matches_java() -> None:
    """`new HashSet<>(set)` presizes its table to max(size / .75 + 1, 16) buckets: 24 tasks get 64 buckets
    instead of the 32 the source grew to, so the copy iterates differently (JDK 17 output as literals)."""
    assert [java_hash_set_copy_capacity(n) for n in (0, 11, 12, 13, 23, 24, 48)] == [16, 16, 32, 32, 32, 64, 128]
    source = java_hash_set_order([TaskId(s, p) for s in range(3) for p in range(8)], TaskId.java_hash_code)
    assert source == _tasks(
        "1_0, 2_1, 2_0, 0_7, 0_6, 1_7, 0_5, 1_6, 2_7, 0_4, 1_5, 2_6, 0_3, 1_4, 2_5, 0_2, 1_3, 2_4, 0_1, 1_2, 2_3, "
        "0_0, 1_1, 2_2"
    )
    assert java_hash_set_copy_order(source, TaskId.java_hash_code) == _tasks(
        "2_1, 0_6, 1_6, 0_4, 2_6, 1_4, 0_2, 2_4, 1_2, 0_0, 2_2, 1_0, 2_0, 0_7, 1_7, 0_5, 2_7, 1_5, 0_3, 2_5, 1_3, "
        "0_1, 2_3, 1_1"
    )


def test_constrained_priority_set_polls_least_loaded_valid_client() -> None:
    loads = {uuid.UUID(int=1): 2.0, uuid.UUID(int=2): 1.0, uuid.UUID(int=3): 1.0}
    allowed = {uuid.UUID(int=1), uuid.UUID(int=3)}
    cps = ConstrainedPrioritySet(lambda p, _t: p in allowed, loads.__getitem__)
    cps.offer_all(sorted(loads, key=java_uuid_key))
    assert cps.poll(TaskId(0, 0)) == uuid.UUID(int=3)
    assert cps.poll(TaskId(0, 0)) == uuid.UUID(int=1)  # 3 was taken out by the previous poll
    assert cps.poll(TaskId(0, 0)) is None
    cps.offer(uuid.UUID(int=3))
    assert cps.poll(TaskId(0, 0), lambda p: p != uuid.UUID(int=3)) is None


@pytest.mark.parametrize("seed", range(40))
def test_hash_set_order_shortcut_matches_replaying_every_insertion(seed: int) -> None:
    """The load-factor-only shortcut gives the order of the full replay (and steps aside when a bucket could
    reach 9 entries below 64 buckets): hash codes from a narrow range collide often, so both paths run."""
    rng = random.Random(seed)
    spread = rng.choice([16, 64, 1 << 20, 1 << 32])
    items = [rng.randrange(-spread // 2, spread // 2) for _ in range(rng.randrange(2, 120))]
    items += rng.sample(items, min(len(items), 5))  # re-added items keep their place
    capacity = rng.choice([16, 32, 64, 128])
    replayed = _order_by_replaying_insertions(items, int, capacity)
    assert java_hash_set_order(items, int, capacity=capacity) == replayed
    shortcut = _order_without_treeify_resize(items, int, capacity)
    assert shortcut is None or shortcut == replayed
