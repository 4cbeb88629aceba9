"""Kafka Streams' `Graph` (min-cost flow by cycle cancelling, max flow by Ford-Fulkerson), on hand-solved graphs."""

from __future__ import annotations

import pytest

from streamlet.assignment.min_cost_flow import Graph
from streamlet.errors import TaskAssignmentError


def _two_tasks_two_clients(cost_00: int, cost_01: int, cost_10: int, cost_11: int) -> Graph:
    """Source -1 -> tasks 0, 1 -> clients 2, 3 -> sink 4; task 0 on client 2, task 1 on client 3."""
    graph = Graph()
    graph.add_edge(-1, 0, 1, 0, 1)
    graph.add_edge(-1, 1, 1, 0, 1)
    graph.add_edge(0, 2, 1, cost_00, 1)
    graph.add_edge(0, 3, 1, cost_01, 0)
    graph.add_edge(1, 2, 1, cost_10, 0)
    graph.add_edge(1, 3, 1, cost_11, 1)
    graph.add_edge(2, 4, 1, 0, 1)
    graph.add_edge(3, 4, 1, 0, 1)
    graph.source_node, graph.sink_node = -1, 4
    return graph


def test_cycle_cancelling_swaps_when_the_swap_is_cheaper() -> None:
    graph = _two_tasks_two_clients(10, 1, 1, 10)
    assert graph.total_cost() == 20
    graph.solve_min_cost_flow()
    assert graph.total_cost() == 2
    assert [e.flow for e in graph.edges(0)] == [0, 1]  # task 0 -> client 3
    assert [e.flow for e in graph.edges(1)] == [1, 0]  # task 1 -> client 2
    assert graph.flow() == 2


def test_an_optimal_flow_is_left_alone() -> None:
    graph = _two_tasks_two_clients(1, 10, 10, 1)
    graph.solve_min_cost_flow()
    assert graph.total_cost() == 2
    assert [e.flow for e in graph.edges(0)] == [1, 0]


def test_ties_keep_the_given_flow() -> None:
    """Cycle cancelling only follows strictly negative cycles: an equal-cost swap is not made."""
    graph = _two_tasks_two_clients(5, 5, 5, 5)
    graph.solve_min_cost_flow()
    assert [e.flow for e in graph.edges(0)] == [1, 0]
    assert [e.flow for e in graph.edges(1)] == [0, 1]


def test_max_flow_fills_capacities_in_bfs_order() -> None:
    graph = Graph()
    for task in (0, 1, 2):
        graph.add_edge(-1, task, 1, 0, 0)
        graph.add_edge(task, 3, 1, 0, 0)
        graph.add_edge(task, 4, 1, 0, 0)
    graph.add_edge(3, 5, 2, 0, 0)
    graph.add_edge(4, 5, 1, 0, 0)
    graph.source_node, graph.sink_node = -1, 5
    assert graph.calculate_max_flow() == 3
    # BFS visits the lower node first: tasks 0 and 1 fill node 3, task 2 takes node 4
    assert [[e.flow for e in graph.edges(t)] for t in (0, 1, 2)] == [[1, 0], [1, 0], [0, 1]]


def test_flow_that_is_not_conserved_is_rejected() -> None:
    graph = Graph()
    graph.add_edge(-1, 0, 1, 0, 1)
    graph.add_edge(0, 1, 1, 0, 0)
    graph.source_node, graph.sink_node = -1, 1
    with pytest.raises(TaskAssignmentError, match="doesn't match output flow"):
        graph.solve_min_cost_flow()


def test_an_edge_back_along_an_existing_edge_is_rejected() -> None:
    graph = Graph()
    graph.add_edge(0, 1, 1, 0, 0)
    with pytest.raises(TaskAssignmentError, match="already an edge"):
        graph.add_edge(1, 0, 1, 0, 0)
