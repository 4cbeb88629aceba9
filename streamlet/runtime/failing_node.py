"""Which processor node an error was raised in: the node named to the user and to the processing exception
handler is the one whose own code (or user function) raised, not a node upstream of it that called it.

Every node closure carries its name as its `_node` parameter's default and wraps its body so:

    def map_values(key: Any, value: Any, _node: str = node) -> None:
        try:
            forward(key, fn(value))
        except Exception as exc:
            raised_in(exc, _node)
            raise

The innermost node marks the exception as it passes (the mark is an attribute of the exception object); the
nodes above it see the mark and leave it. A try block costs nothing while nothing raises (CPython 3.11), one
branch when compiled with mypyc; the exception, its identity and its traceback are those the node raised.
(Reading the nodes' frames from the traceback would not do: mypyc-compiled functions have no frame locals.)
tests/unit/runtime/test_failing_node.py checks that every function with a `_node` parameter wraps its body so.
"""

from __future__ import annotations

__all__ = ["failing_node", "raised_in"]

#: the attribute of an exception that names the node it was raised in
NODE_ATTRIBUTE = "_streamlet_failing_node"


def raised_in(exc: BaseException, node: str) -> None:
    """Mark `exc` as raised in `node`, unless a node below it marked it already."""
    if getattr(exc, NODE_ATTRIBUTE, None) is None:
        try:
            setattr(exc, NODE_ATTRIBUTE, node)
        except AttributeError:  # an exception type without a __dict__: its node stays unknown
            pass


def failing_node(exc: BaseException) -> str | None:
    """The node `exc` was raised in (None: outside every node), and forget it: an exception object raised again
    later (a user function may keep one) is marked afresh."""
    node = getattr(exc, NODE_ATTRIBUTE, None)
    if node is None:
        return None
    delattr(exc, NODE_ATTRIBUTE)
    return node if isinstance(node, str) else None
