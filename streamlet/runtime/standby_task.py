"""StandbyTask: a standby (or warmup) replica of a stateful task, kept warm from its changelog."""

from __future__ import annotations

from streamlet.runtime.task_state import TaskState, checked_transition
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId


class StandbyTask:
    """Standby (or warmup) task: keeps its stores open and follows their changelogs."""

    def __init__(self, task_id: TaskId, state_manager: ProcessorStateManager) -> None:
        self.task_id = task_id
        self.state_manager = state_manager
        self.state = TaskState.CREATED
        # its stores are registered: no topology to initialize, RUNNING at once (Kafka's StandbyTask)
        self.transition_to(TaskState.RESTORING)
        self.transition_to(TaskState.RUNNING)

    def transition_to(self, new: TaskState) -> None:
        """Move to `new` along Kafka Streams' state table (`task_state`), or raise."""
        self.state = checked_transition(self.task_id, self.state, new)

    def close(self, *, clean: bool) -> None:
        if self.state is TaskState.CLOSED:
            return  # closed already (as Kafka's close, a no-op)
        self.transition_to(TaskState.SUSPENDED)
        self.state_manager.close(clean=clean)
        self.transition_to(TaskState.CLOSED)
