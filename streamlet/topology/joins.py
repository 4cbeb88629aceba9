"""KStream-KTable joins of the DSL (Kafka Streams' `KStreamImpl#join(KTable)` / `#leftJoin(KTable)`).

The join processor reads the table through its value getter (its source store, materialized for the join,
then the table's filters and mapValues), so it shares the table's store and lands in the table's
sub-topology. A stream whose key was changed is first written through a repartition topic named after the
join (`<name>-repartition`) or, unnamed, after the stream's node (`KStreamImpl#repartitionForJoin`); the
join's topics must then be co-partitioned, which `Topology` enforces when it is given partition counts.
The DSL methods are in `streamlet.topology.builder`; this module holds what they share with the build.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

JOIN_NAME = "KSTREAM-JOIN-"
LEFTJOIN_NAME = "KSTREAM-LEFTJOIN-"


class GraphNode(Protocol):
    """A node of the DSL's logical graph, as far as the null-key analysis needs it."""

    @property
    def children(self) -> Iterable[Any]: ...


def keep_all(key: Any, value: Any) -> bool:
    """The predicate of a repartition's filter when null keys must pass."""
    return True


def null_key_relaxed_join_below(relaxed: set[Any], node: GraphNode | None) -> bool:
    """True if a left join (in `relaxed`: it joins null keys) is downstream of `node` in the logical graph: then
    its repartition keeps null keys (Kafka's `NodesWithRelaxedNullKeyJoinDownstream`), else it drops them."""
    if node is None or not relaxed:
        return False
    seen: set[Any] = set()
    pending = list(node.children)
    while pending:
        child = pending.pop()
        if child in relaxed:
            return True
        if child not in seen:
            seen.add(child)
            pending.extend(child.children)
    return False
