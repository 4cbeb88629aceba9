"""`Branched` and the splitter of `KStream.split()` (Kafka Streams' `Branched`, `KStreamBranch`).

`split()` sends each record to the first branch whose predicate holds, else to the default branch if there is
one, else nowhere; every branch is a pass-through node named `<splitter name><branch name or index>` (the
default branch's index is 0). The DSL side (`BranchedKStream`) is in `streamlet.topology.kstream`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.topology.nodes import validate_name

BRANCH_NAME = "KSTREAM-BRANCH-"
BRANCHCHILD_NAME = "KSTREAM-BRANCHCHILD-"
MERGE_NAME = "KSTREAM-MERGE-"


@dataclass(frozen=True)
class Branched:
    """How a branch is named and what is done with it (Kafka's `Branched`): `as_(name)` names it;
    `with_function(fn)` puts `fn(branch)` in the returned dict (unless None); `with_consumer(fn)` calls
    `fn(branch)` and leaves the branch out of the dict."""

    name: str | None = None
    function: Callable[[Any], Any] | None = None
    consumer: Callable[[Any], None] | None = None

    @staticmethod
    def as_(name: str) -> Branched:
        return Branched(validate_name(name, "Branch name"))

    @staticmethod
    def with_function(function: Callable[[Any], Any], name: str | None = None) -> Branched:
        if not callable(function):
            raise TopologyError(f"Branched.with_function needs a callable, got {function!r}")
        return Branched(None if name is None else validate_name(name, "Branch name"), function=function)

    @staticmethod
    def with_consumer(consumer: Callable[[Any], None], name: str | None = None) -> Branched:
        if not callable(consumer):
            raise TopologyError(f"Branched.with_consumer needs a callable, got {consumer!r}")
        return Branched(None if name is None else validate_name(name, "Branch name"), consumer=consumer)


class Splitter:
    """The splitter's function: the name of the branch a record goes to, or None (no default branch)."""

    __slots__ = ("predicates", "children")

    def __init__(self, predicates: tuple[Callable[[Any, Any], Any], ...], children: tuple[str, ...]) -> None:
        self.predicates = predicates
        self.children = children  # one per predicate, then the default branch if there is one

    def __call__(self, key: Any, value: Any) -> str | None:
        for i, predicate in enumerate(self.predicates):
            if predicate(key, value):
                return self.children[i]
        return self.children[-1] if len(self.children) > len(self.predicates) else None
