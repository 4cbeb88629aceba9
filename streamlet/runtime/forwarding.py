"""How compiled processor nodes call each other: a node is a `Forward`, `(key, value) -> None`, and a parent
calls its children's directly (Kafka Streams' `context.forward` to every child, in topology order).

`noop` is the forward of a node without children; aggregations compare against it (identity) to skip
deserializing what nobody reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Forward", "fanout", "noop"]

Forward = Callable[[Any, Any], None]


def noop(key: Any, value: Any) -> None:
    return None


def fanout(children: list[Forward]) -> Forward:
    """One forward calling `children` in order: the child itself when there is one, `noop` when none."""
    if not children:
        return noop
    if len(children) == 1:
        return children[0]
    targets = tuple(children)

    def forward(key: Any, value: Any) -> None:
        for child in targets:
            child(key, value)

    return forward
