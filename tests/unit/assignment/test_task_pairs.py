"""TaskPairs, the sticky assignors' "no two clients with the same tasks" memory."""

from __future__ import annotations

import pytest

from streamlet.assignment.task_pairs import TaskPairs
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

A, B, C = TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)


def test_a_pair_is_new_until_some_client_has_it_in_either_order() -> None:
    pairs = TaskPairs(3)
    assert pairs.has_new_pair(A, [B])
    pairs.add_pairs(B, [A])
    assert not pairs.has_new_pair(A, [B])
    assert pairs.has_new_pair(A, [B, C])
    assert not pairs.has_new_pair(A, [])


def test_no_pair_is_new_once_all_pairs_exist() -> None:
    pairs = TaskPairs(3)
    pairs.add_pairs(A, [B, C])
    pairs.add_pairs(B, [C])
    assert not pairs.has_new_pair(A, [TaskId(9, 9)])  # the cap, not the content, answers


def test_max_pairs_is_java_int_arithmetic() -> None:
    assert TaskPairs(46341).max_pairs == 46341 * 46340 // 2
    with pytest.raises(TaskAssignmentError, match="overflow"):
        TaskPairs(46342)  # 46342 * 46341 overflows an int: Java's new HashSet<>(negative) throws
