"""A watchdog for a test that runs far too long: it prints where every asyncio task is waiting.

faulthandler's dump (`faulthandler_timeout`) shows threads only: for a test stuck in an await, the main thread is
just the event loop in `select()`. This walks each task's await chain (`cr_await`) instead, which names the
coroutine and line that never resumed (a mypyc-compiled coroutine ends the chain: it has no frames to show).
Then it cancels the test's own task: the test fails with the traceback of the await it was stuck in (mypyc's frames
included), in the failures summary that CI's excerpt keeps, and the session goes on instead of hanging until CI's
time limit ends it with nothing said.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from types import FrameType
from typing import Any


class StuckTestWatch:
    """One daemon thread per session; `started`/`finished` bracket each test."""

    def __init__(self, after_s: float, poll_s: float = 5.0) -> None:
        self.after_s, self.poll_s = after_s, poll_s
        self._current: tuple[str, str, float] | None = None  # node id, test function's name, start
        self._dumped: str | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        threading.Thread(target=self._watch, name="stuck-test-watch", daemon=True).start()

    def started(self, nodeid: str, function: str) -> None:
        with self._lock:
            self._current = (nodeid, function, time.monotonic())

    def finished(self) -> None:
        with self._lock:
            self._current = None

    def stop(self) -> None:
        self._stopped.set()

    def _watch(self) -> None:
        while not self._stopped.wait(self.poll_s):
            with self._lock:
                current = self._current
            if current is None or current[0] == self._dumped or time.monotonic() - current[2] < self.after_s:
                continue
            nodeid, function, _ = current
            self._dumped = nodeid
            text = f"\n=== {nodeid} has run for over {self.after_s:.0f} s; its asyncio tasks:\n{task_stacks()}"
            cancelled = cancel_test_task(function, f"stuck-test watch: {nodeid} ran for over {self.after_s:.0f} s")
            text += (
                f"=== {'its task is cancelled' if cancelled else 'no task of it is pending (a fixture or sync code)'}\n"
            )
            os.write(2, text.encode(errors="replace"))


def task_stacks() -> str:
    """Every pending asyncio task of the process, each with its await chain, innermost last."""
    lines = []
    for task in _pending_tasks():
        lines.append(f"{task!r}"[:300])
        lines.append(f"  waiting on {getattr(task, '_fut_waiter', None)!r}"[:300])
        lines.extend(f"    {step}" for step in await_chain(task.get_coro()))
    return "\n".join(lines) + "\n"


def cancel_test_task(function: str, message: str) -> bool:
    """Cancel, from this thread, the pending task running the test function's coroutine (pytest-asyncio runs the
    test as one task); the CancelledError raised at its await fails the test with that await's traceback."""
    for task in _pending_tasks():
        code = getattr(task.get_coro(), "cr_code", None)
        if code is not None and code.co_name == function:
            task.get_loop().call_soon_threadsafe(task.cancel, message)
            return True
    return False


def _pending_tasks() -> list[asyncio.Task[Any]]:
    try:
        tasks = list(asyncio.tasks._all_tasks)  # type: ignore[attr-defined]  # every loop's, from any thread
    except RuntimeError:  # the set changed while copied: one more try
        tasks = list(asyncio.tasks._all_tasks)  # type: ignore[attr-defined]
    return [task for task in tasks if not task.done()]


def await_chain(awaitable: Any) -> list[str]:
    steps = []
    for _ in range(100):
        frame: FrameType | None = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is not None:
            steps.append(f"{frame.f_code.co_qualname} ({frame.f_code.co_filename}:{frame.f_lineno})")
        else:
            steps.append(f"{awaitable!r}"[:200])
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom", None)
        if awaitable is None:
            break
    return steps
