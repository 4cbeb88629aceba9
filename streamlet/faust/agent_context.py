"""The task an agent is processing a record for: how tables and topics reach the runtime from agent code.

An agent body calls `table[key]` or `await topic.send(...)` without passing a context around, as in Faust;
the agent's processor sets this context variable around each step of the agent's coroutine.
"""

from __future__ import annotations

import contextvars
import inspect
from typing import Any

from streamlet.errors import TopologyError
from streamlet.runtime.task_context import TaskContext

__all__ = ["AgentError", "current_context", "record_value", "run_inline", "table_store", "task_context"]

task_context: contextvars.ContextVar[TaskContext | None] = contextvars.ContextVar("streamlet_task", default=None)
#: the value the agent is processing (what a windowed table's `relative_to_field` reads)
record_value: contextvars.ContextVar[Any] = contextvars.ContextVar("streamlet_record_value", default=None)


class AgentError(TopologyError):
    """An agent did something it cannot do when running inside a task."""


def current_context(what: str) -> TaskContext:
    """The task whose record the agent is processing; `what` names the caller in the error outside an agent."""
    ctx = task_context.get()
    if ctx is None:
        raise AgentError(f"{what} can only be used inside an agent while it processes a record")
    return ctx


def table_store(ctx: TaskContext, name: str) -> Any:
    """The task's store of table `name`, or an error saying how to give the task that store (a task has the
    stores of its agents' `tables=[...]` only; `agent_references` checks what it can when the topology is built)."""
    try:
        return ctx.get_state_store(name)
    except KeyError:
        raise AgentError(
            f"table {name!r} is not a table of the agent using it: add it to the agent's "
            f"@app.agent(topic, tables=[...]), so that its tasks get the table's store"
        ) from None


def run_inline(result: Any, what: str) -> None:
    """Run a callback's coroutine (if it returned one) to its end inside the task: streamlet's sends never
    suspend, so a coroutine that does awaited something else, which `what` is named in the error for."""
    if not inspect.isawaitable(result):
        return
    step = result.__await__()
    try:
        waits_for = step.send(None)
    except StopIteration:
        return
    step.close()
    raise AgentError(f"{what} awaited {waits_for!r}; it runs inside its task and may only await streamlet operations")
