"""The splitter of `KStream.split()` (Kafka Streams' `KStreamBranch`): each record goes to one branch at most.

Unlike other nodes, which forward to all their children, the splitter forwards to the child its `Splitter`
names (the first branch whose predicate holds, else the default branch, else none), as Kafka's
`context.forward(record, childName)` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.topology.nodes import BranchSpec


def split(spec: BranchSpec, children: Mapping[str, Forward]) -> Forward:
    """The splitter node of `spec` (op BRANCH), forwarding to `children` (child name -> compiled node)."""
    choose: Any = spec.fn
    targets = dict(children)

    def splitter(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            child = choose(key, value)
            if child is not None:
                targets[child](key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return splitter
