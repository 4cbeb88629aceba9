"""Table: Faust's dict API over the current task's store, and iteration over every task this worker runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamlet import App
from streamlet.faust.agent_context import AgentError, task_context
from streamlet.models import Record
from streamlet.state.store import InMemoryKeyValueStore
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext


class Visit(Record):
    page: str
    count: int = 0


@dataclass
class _Worker:
    """The tasks of one client: each task's context answers `local_stores` with all of theirs, as StreamTask does."""

    contexts: dict[TaskId, FakeContext] = field(default_factory=dict)

    def task(self, task_id: TaskId) -> FakeContext:
        worker = self

        class _Ctx(FakeContext):
            def local_stores(self, name: str) -> list[Any]:
                return [c.get_state_store(name) for _, c in sorted(worker.contexts.items())]

        return self.contexts.setdefault(task_id, _Ctx(task_id, store_factory=InMemoryKeyValueStore))


@contextlib.contextmanager
def _in(ctx: FakeContext) -> Iterator[None]:
    token = task_context.set(ctx)  # type: ignore[arg-type]
    try:
        yield
    finally:
        task_context.reset(token)


def test_dict_api_on_the_current_tasks_store() -> None:
    table = App("t").Table("visits", value_type=Visit)
    ctx = FakeContext(TaskId(0, 0), store_factory=InMemoryKeyValueStore)
    with _in(ctx):
        assert "ann" not in table and table.get("ann") is None and table.get("ann", 5) == 5
        with pytest.raises(KeyError):
            table["ann"]
        table["ann"] = Visit("/a", 2)
        assert "ann" in table and table["ann"] == Visit("/a", 2) and table.get("ann") == Visit("/a", 2)
        del table["ann"]
        del table["never-there"]  # no error, as in Faust's RocksDB tables
        assert "ann" not in table
        table["bob"] = Visit("/b")
        assert table.pop("bob") == Visit("/b") and table.pop("bob", None) is None
    assert list(ctx.stores["visits"].all()) == []


def test_a_default_factory_answers_getitem_and_get_as_in_faust_without_storing() -> None:
    # Faust's Table.__missing__ returns default(); its Mapping.get reads table[key], so get() does too
    table = App("t").Table("counts", value_serde="int64", default=int)
    with _in(FakeContext(TaskId(0, 0), store_factory=InMemoryKeyValueStore)):
        assert table["x"] == 0 and table.get("x") == 0 and table.get("x", 5) == 0
        assert "x" not in table and len(table) == 0


def test_items_keys_values_and_len_cover_every_task_of_the_worker() -> None:
    table = App("t").Table("counts", value_serde="int64", default=int)
    worker = _Worker()
    written = {TaskId(0, 0): {"a": 1, "c": 3}, TaskId(0, 1): {"b": 2}, TaskId(0, 2): {}}
    for task_id, entries in written.items():
        with _in(worker.task(task_id)):
            for key, value in entries.items():
                table[key] = value
    expected = {k: v for entries in written.values() for k, v in entries.items()}
    with _in(worker.contexts[TaskId(0, 2)]):  # from a task that holds nothing itself
        assert dict(table.items()) == expected
        assert sorted(table.keys()) == sorted(expected) and sorted(table) == sorted(expected)
        assert sorted(table.values()) == sorted(expected.values())
        assert len(table) == len(expected)


def test_without_a_worker_view_iteration_is_the_current_task() -> None:
    table = App("t").Table("counts", value_serde="int64")
    ctx = FakeContext(TaskId(0, 0), store_factory=InMemoryKeyValueStore)
    with _in(ctx):
        table["a"] = 1
        assert list(table.items()) == [("a", 1)]


def test_iteration_outside_an_agent_is_an_error() -> None:
    with pytest.raises(AgentError, match="inside an agent"):
        list(App("t").Table("counts").items())
