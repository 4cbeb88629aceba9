"""StandbyTask: a standby (or warmup) replica of a stateful task, kept warm from its changelog."""

from __future__ import annotations

from streamlet.runtime.task_state import TaskState
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId


class StandbyTask:
    """Standby (or warmup) task: keeps its stores open and follows their changelogs."""

    def __init__(self, task_id: TaskId, state_manager: ProcessorStateManager) -> None:
        self.task_id = task_id
        self.state_manager = state_manager
        self.state = TaskState.RUNNING

    def close(self, *, clean: bool) -> None:
        self.state_manager.close(clean=clean)
        self.state = TaskState.CLOSED
