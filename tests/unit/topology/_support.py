"""Helpers shared by the topology tests."""

from __future__ import annotations

from streamlet.topology import nodes as n


def lines(text: str) -> list[str]:
    """Lines with trailing whitespace stripped (the only normalisation the describe tests allow)."""
    return [line.rstrip() for line in text.split("\n")]


def spec_families() -> set[type[n.ProcessorSpec]]:
    """The processor spec families of `topology/nodes.py`: the `ProcessorSpec` subclasses with operations of
    their own (not a subclass some test made)."""
    found: set[type[n.ProcessorSpec]] = set()
    pending: list[type[n.ProcessorSpec]] = [n.ProcessorSpec]
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind.OPS and kind.__module__ == n.__name__:
            found.add(kind)
    return found
