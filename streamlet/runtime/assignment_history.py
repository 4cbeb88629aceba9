"""AssignmentHistoryWriter: the group leader appends each rebalance's event to `<application_id>-assignments`.

One writer per client (all its stream threads share it: whichever thread is the group leader records).
The assignor runs synchronously inside aiokafka's join, so `record` only queues the event; one sender task
produces the events in order. Losing an event must never break a rebalance: a failed send is logged and
the next event still goes out. The writer also remembers the last event it recorded, which is what
`infer_trigger` compares against.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka import AIOKafkaProducer

log = logging.getLogger("streamlet.assignment.history")


class AssignmentHistoryWriter:
    """Queues assignment events and produces them, in order, to the history topic."""

    def __init__(
        self, topic: str, application_id: str, assignor_name: str, producer_factory: Callable[[], AIOKafkaProducer]
    ) -> None:
        self.topic = topic
        self.application_id = application_id
        self.assignor_name = assignor_name
        self._producer_factory = producer_factory
        self._producer: AIOKafkaProducer | None = None
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._sender: asyncio.Task[None] | None = None
        self._last: dict[str, Any] | None = None

    async def start(self) -> None:
        self._producer = self._producer_factory()
        await self._producer.start()
        self._sender = asyncio.create_task(self._send_loop(), name=f"{self.topic}-writer")

    def previous_event(self) -> Mapping[str, Any] | None:
        return self._last

    def record(self, event: dict[str, Any]) -> None:
        """Called by the leader's assignor (synchronously, inside the join); never raises."""
        self._last = event
        if self._sender is None:
            log.warning(
                "assignment history writer not started: dropping the event of generation %s", event.get("generation")
            )
            return
        self._queue.put_nowait(event)

    async def _send_loop(self) -> None:
        assert self._producer is not None
        while True:
            event = await self._queue.get()
            try:
                value = json.dumps(event, sort_keys=True).encode()
                await self._producer.send_and_wait(self.topic, value=value, key=self.application_id.encode())
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("appending the assignment event of generation %s failed", event.get("generation"))
            finally:
                self._queue.task_done()

    async def close(self, timeout: float = 5.0) -> None:
        """Send what is queued, then stop; each phase bounded by `timeout`, so a broker outage cannot hold
        up the client's shutdown (the history is best effort; the rebalances themselves are not affected)."""
        if self._sender is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._queue.join(), timeout)
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
            self._sender = None
        if self._producer is not None:
            try:
                await asyncio.wait_for(self._producer.stop(), timeout)
            except TimeoutError:
                log.warning("the assignment history producer did not stop within %.0fs", timeout)
            except Exception:
                log.exception("stopping the assignment history producer failed")
            self._producer = None
