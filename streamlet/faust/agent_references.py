"""What an agent's code references: the tables it must declare, and the topics it may write.

An agent's tables are state stores connected to its processor, so a task has only the stores its agents
declare. Writing another table used to fail at the first record with a bare `KeyError`; reading the agent's
code when the topology is built names the table and what to add before any record flows. The topics it
references (and its `sinks=`) are the topics it may send to: the client checks they exist at start-up, as
it checks source topics, instead of failing at the first send.

Both see what the agent function (and the functions and lambdas defined in it) names as globals or closure
variables. A table reached another way (an attribute, a helper function) is caught at the record instead,
by `agent_context.table_store`, with the same advice; a topic so reached, by the record collector at its
first send.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import CodeType
from typing import Any

from streamlet.faust.agent_context import AgentError
from streamlet.faust.global_tables import GlobalTable
from streamlet.faust.tables import Table
from streamlet.faust.topic_ref import TopicRef
from streamlet.faust.windowed_tables import WindowWrapper


def referenced_objects(fn: Callable[..., Any]) -> list[Any]:
    """The objects `fn`'s code names as globals or closure variables, nested code objects included."""
    code: CodeType = fn.__code__
    names: set[str] = set()
    pending = [code]
    while pending:
        current = pending.pop()
        names.update(current.co_names)
        pending.extend(c for c in current.co_consts if isinstance(c, CodeType))
    globals_: dict[str, Any] = getattr(fn, "__globals__", {})
    found = [globals_[name] for name in sorted(names) if name in globals_]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell: the variable is not bound yet
            continue
    return found


def check_declared_tables(agent_name: str, fn: Callable[..., Any], declared: Iterable[Any]) -> None:
    """Raise naming each table `fn` uses but `declared` lacks (global tables are every task's: never missing)."""
    have = {id(t) for t in declared}
    missing: list[str] = []
    for obj in referenced_objects(fn):
        table = obj.table if isinstance(obj, WindowWrapper) else obj
        if isinstance(table, Table) and not isinstance(table, GlobalTable) and id(table) not in have:
            if table.name not in missing:
                missing.append(table.name)
    if missing:
        raise AgentError(
            f"agent {agent_name} uses table(s) {', '.join(map(repr, missing))} but does not declare them: "
            f"add them to its decorator, @app.agent(topic, tables=[...]), so that its tasks get their stores"
        )


def output_topics(fn: Callable[..., Any], sinks: Iterable[Any]) -> list[str]:
    """The topics the agent's code references (`topic.send`, another agent's `send`) and its sinks' topics."""
    found: list[str] = []
    for obj in [*referenced_objects(fn), *sinks]:
        topic = obj if isinstance(obj, TopicRef) else getattr(obj, "topic", None)  # an Agent: the topic it reads
        if isinstance(topic, TopicRef) and topic.name not in found:
            found.append(topic.name)
    return found
