"""Kafka Streams' `Graph` (4.1): a flow network solved by max flow and cycle-cancelling min-cost flow.

KIP-925's rack-aware assignor turns "which client runs which task" into a min-cost flow and reads the
assignment back from the edges that carry flow. Min-cost solutions are rarely unique, so *which* optimum
comes out is decided by the algorithm's visiting order. This module therefore copies Kafka Streams'
`Graph` step by step rather than using a textbook solver:

* nodes and each node's edges are visited in ascending order (Java `TreeMap`), the dummy source
  (`None`, Java's `null`) first;
* negative cycles are found with Bellman-Ford from a dummy source linked to every node, taking the
  first edge relaxed in the last round, and cancelled one at a time (`cancelNegativeCycles`);
* the initial feasible flow is either given (`MinTrafficGraphConstructor`) or found by Ford-Fulkerson
  with breadth-first search (`calculateMaxFlow`, used by `BalanceSubtopologyGraphConstructor`).

Two deliberate shortcuts, both exact: Bellman-Ford stops as soon as a round relaxes nothing (Java keeps
looping, but every later round would relax nothing too), and skips nodes whose distance has not changed
since their edges were last scanned (see `_detect_negative_cycle`).
"""

from __future__ import annotations

from collections import deque

from streamlet.errors import TaskAssignmentError

#: A node id (>= -1); `None` is only the internal dummy source of the cycle search.
Node = int | None


class Edge:
    """One directed edge; in a residual graph, `counter_edge` is its reverse twin."""

    __slots__ = ("capacity", "cost", "counter_edge", "destination", "flow", "forward_edge", "residual_flow")

    def __init__(
        self, destination: int, capacity: int, cost: int, residual_flow: int, flow: int, forward_edge: bool = True
    ) -> None:
        if capacity < 0:
            raise TaskAssignmentError("Edge capacity cannot be negative")
        if flow > capacity:
            raise TaskAssignmentError(f"Edge flow {flow} cannot exceed capacity {capacity}")
        self.destination = destination
        self.capacity = capacity
        self.cost = cost
        self.residual_flow = residual_flow
        self.flow = flow
        self.forward_edge = forward_edge
        self.counter_edge: Edge | None = None

    def __repr__(self) -> str:
        return (
            f"Edge(destination={self.destination}, capacity={self.capacity}, cost={self.cost}, "
            f"residual_flow={self.residual_flow}, flow={self.flow}, forward_edge={self.forward_edge})"
        )


def _sort_key(node: Node) -> tuple[int, int]:
    """`Comparator.nullsFirst(naturalOrder())`."""
    return (0, 0) if node is None else (1, node)


def _push(edge: Edge, amount: int) -> None:
    """Send `amount` along a residual edge (the same four lines appear twice in Java's `Graph`)."""
    counter = edge.counter_edge
    assert counter is not None
    edge.residual_flow -= amount
    if edge.forward_edge:
        edge.flow += amount
    counter.residual_flow += amount
    if counter.forward_edge and counter.flow >= amount:
        counter.flow -= amount


class Graph:
    """A flow network with integer node ids; see the module docstring for why it mirrors Java exactly."""

    def __init__(self, *, residual: bool = False) -> None:
        self._adj: dict[Node, dict[int, Edge]] = {}
        self._nodes: set[Node] = set()
        self._residual = residual
        self.source_node: int | None = None
        self.sink_node: int | None = None

    # ---- building -------------------------------------------------------------------------------------

    def add_edge(self, u: int, v: int, capacity: int, cost: int, flow: int) -> None:
        self._add(u, Edge(v, capacity, cost, capacity - flow, flow))

    def _add(self, u: Node, edge: Edge) -> None:
        if not self._residual and u in self._adj.get(edge.destination, {}):
            raise TaskAssignmentError(
                f"There is already an edge from {edge.destination} to {u}: an edge from {u} to "
                f"{edge.destination} would create a cycle between two nodes"
            )
        self._adj.setdefault(u, {})[edge.destination] = edge
        self._nodes.add(u)
        self._nodes.add(edge.destination)

    def edges(self, node: Node) -> list[Edge]:
        """The node's outgoing edges by destination."""
        edges = self._adj.get(node, {})
        return [edges[d] for d in sorted(edges)]

    def _sorted_adjacency(self) -> list[tuple[Node, list[Edge]]]:
        return [(u, self.edges(u)) for u in sorted(self._adj, key=_sort_key)]

    def total_cost(self) -> int:
        return sum(e.cost * e.flow for edges in self._adj.values() for e in edges.values())

    def flow(self) -> int:
        return sum(e.flow for e in self._adj.get(self.source_node, {}).values())

    # ---- residual graph -----------------------------------------------------------------------------

    def residual_graph(self) -> Graph:
        """Each edge u->v (capacity c, cost w, flow f) becomes u->v (residual c-f) and v->u (residual f, cost -w)."""
        if self._residual:
            return self
        residual = Graph(residual=True)
        for u, edges in self._sorted_adjacency():
            assert u is not None
            for e in edges:
                forward = Edge(e.destination, e.capacity, e.cost, e.capacity - e.flow, e.flow)
                backward = Edge(u, e.capacity, -e.cost, e.flow, 0, forward_edge=False)
                forward.counter_edge = backward
                backward.counter_edge = forward
                residual._add(u, forward)
                residual._add(e.destination, backward)
        residual.source_node = self.source_node
        residual.sink_node = self.sink_node
        return residual

    def _copy_flows_from(self, residual: Graph) -> None:
        for u, edges in self._adj.items():
            for v, edge in edges.items():
                twin = residual._adj[u][v]
                edge.flow = twin.flow
                edge.residual_flow = twin.residual_flow

    # ---- min-cost flow (cycle cancelling) -----------------------------------------------------------

    def solve_min_cost_flow(self) -> None:
        """Turn the current (valid) flow into a min-cost flow of the same value."""
        self._validate_min_cost_graph()
        residual = self.residual_graph()
        # dummy source linked to every node: negative cycles anywhere become reachable
        residual._adj[None] = {n: Edge(n, 1, 0, 1, 0) for n in residual._nodes if n is not None}
        residual._nodes.add(None)
        residual._cancel_negative_cycles()
        del residual._adj[None]
        residual._nodes.discard(None)
        self._copy_flows_from(residual)

    def _cancel_negative_cycles(self) -> None:
        order = [u for u, _ in self._sorted_adjacency()]
        index = {u: i for i, u in enumerate(order)}
        for leaf in self._nodes:  # nodes without outgoing edges
            index.setdefault(leaf, len(index))
        nodes_by_index: list[Node] = [None] * len(index)
        for each, i in index.items():
            nodes_by_index[i] = each
        adjacency = [(index[u], [(e, index[e.destination]) for e in self.edges(u)]) for u in order]
        node_count = len(self._nodes)
        while True:
            parent_nodes: dict[Node, Node] = {}
            parent_edges: dict[Node, Edge] = {}
            found = self._detect_negative_cycle(adjacency, nodes_by_index, node_count, parent_nodes, parent_edges)
            if found is None:
                return
            visited: set[Node] = set()
            node: Node = found
            while node not in visited:
                visited.add(node)
                node = parent_nodes.get(node)
            self._cancel_negative_cycle(node, parent_nodes, parent_edges)

    @staticmethod
    def _detect_negative_cycle(
        adjacency: list[tuple[int, list[tuple[Edge, int]]]],
        nodes_by_index: list[Node],
        node_count: int,
        parent_nodes: dict[Node, Node],
        parent_edges: dict[Node, Edge],
    ) -> int | None:
        """Bellman-Ford from the dummy source (index 0); a relaxation in round `node_count` names a node
        leading to a cycle.

        A node whose distance has not changed since its edges were last scanned is skipped: distances only
        fall, so none of its edges could relax anything, and the relaxations (and their order) are Java's.
        """
        distance: list[int | None] = [None] * len(nodes_by_index)
        distance[0] = 0
        scanned: list[int | None] = [None] * len(nodes_by_index)
        last = node_count - 1
        for i in range(node_count):
            relaxed = False
            for start, edges in adjacency:
                distance_start = distance[start]
                if distance_start is None or scanned[start] == distance_start:
                    continue
                scanned[start] = distance_start
                for edge, end in edges:
                    if edge.residual_flow == 0:
                        continue
                    candidate = distance_start + edge.cost
                    distance_end = distance[end]
                    if distance_end is None or distance_end > candidate:
                        distance[end] = candidate
                        end_node = nodes_by_index[end]
                        parent_nodes[end_node] = nodes_by_index[start]
                        parent_edges[end_node] = edge
                        if i == last:
                            assert end_node is not None
                            return end_node
                        relaxed = True
            if not relaxed:
                return None
        return None

    @staticmethod
    def _cancel_negative_cycle(
        node_in_cycle: Node, parent_nodes: dict[Node, Node], parent_edges: dict[Node, Edge]
    ) -> None:
        parent_node = parent_nodes.get(node_in_cycle)
        possible_flow = parent_edges[node_in_cycle].residual_flow
        current = parent_node
        while current != node_in_cycle:
            possible_flow = min(possible_flow, parent_edges[current].residual_flow)
            current = parent_nodes.get(current)
        _push(parent_edges[node_in_cycle], possible_flow)
        current = parent_node
        while current != node_in_cycle:
            _push(parent_edges[current], possible_flow)
            current = parent_nodes.get(current)

    def _validate_min_cost_graph(self) -> None:
        """The given flow must be conserved at every inner node and equal at source and sink."""
        if self._residual:
            raise TaskAssignmentError("Should not be residual graph to solve min cost flow")
        in_flow: dict[int, int] = {}
        out_flow: dict[int, int] = {}
        for u, edges in self._adj.items():
            assert u is not None
            if u == self.sink_node:
                raise TaskAssignmentError(f"Sink node {self.sink_node} shouldn't have output")
            for v, edge in edges.items():
                if v == self.source_node:
                    raise TaskAssignmentError(f"Source node {self.source_node} shouldn't have input {u}")
                out_flow[u] = out_flow.get(u, 0) + edge.flow
                in_flow[v] = in_flow.get(v, 0) + edge.flow
        for node, flow in in_flow.items():
            if node in (self.source_node, self.sink_node):
                continue
            if out_flow.get(node) != flow:
                raise TaskAssignmentError(
                    f"Input flow for node {node} is {flow} which doesn't match output flow {out_flow.get(node)}"
                )
        source_out = out_flow.get(self.source_node) if self.source_node is not None else None
        sink_in = in_flow.get(self.sink_node) if self.sink_node is not None else None
        if source_out != sink_in:
            raise TaskAssignmentError(
                f"Output flow for source {self.source_node} is {source_out} which doesn't match "
                f"input flow {sink_in} for sink {self.sink_node}"
            )

    # ---- max flow (Ford-Fulkerson with BFS) -----------------------------------------------------------

    def calculate_max_flow(self) -> int:
        """Fill the graph with a maximum flow from source to sink; returns its value."""
        residual = self.residual_graph()
        residual._ford_fulkerson()
        self._copy_flows_from(residual)
        return self.flow()

    def _ford_fulkerson(self) -> None:
        source, sink = self.source_node, self.sink_node
        assert source is not None and sink is not None
        while True:
            parents: dict[int, int] = {}
            if not self._breadth_first_search(source, sink, parents):
                return
            possible_flow: int | None = None
            node = sink
            while node != source:
                parent = parents[node]
                residual_flow = self._adj[parent][node].residual_flow
                possible_flow = residual_flow if possible_flow is None else min(possible_flow, residual_flow)
                node = parent
            assert possible_flow is not None
            node = sink
            while node != source:
                parent = parents[node]
                _push(self._adj[parent][node], possible_flow)
                node = parent

    def _breadth_first_search(self, source: int, target: int, parents: dict[int, int]) -> bool:
        visited = {source}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            for edge in self.edges(node):
                nxt = edge.destination
                if nxt in visited or edge.residual_flow <= 0:
                    continue
                if nxt == target:
                    parents[target] = node
                    return True
                queue.append(nxt)
                parents[nxt] = node
                visited.add(nxt)
        return False
