"""GlobalStreamThread: keeps the client's global stores up to date (Kafka Streams' `GlobalStreamThread`).

One per client with global tables, as an owned asyncio task: its consumer is outside the group and assigned
every partition of every global topic. `start()` first restores the global stores up to the topics' end
offsets, from the offsets the stores keep (KIP-1035; or from the beginning), and only returns when they are
complete, so no stream task processes a record against a partial global table. Then the task follows the
topics, applying records as they arrive (each batch with its offsets), and flushes and checkpoints every
`commit_interval_ms`; `close()` cancels and awaits it and checkpoints a last time. A failure of the task
fails the client (`done` holds it), as Kafka's global thread's death does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.runtime.clients import RestoreConsumer
from streamlet.state.global_state_manager import GlobalStateManager
from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.topology import Topology

log = logging.getLogger("streamlet.global")

#: how long one poll of the global consumer waits for records
POLL_MS = 100


class GlobalStreamThread:
    """Restores, then follows, the global topics of `topology` into the client's global stores."""

    def __init__(
        self,
        topology: Topology,
        app_dir: Path,
        consumer: RestoreConsumer,
        partition_counts: Mapping[str, int],
        *,
        commit_interval_ms: int,
        chunk_records: int,
    ) -> None:
        self._consumer = consumer
        self._partitions = [
            TopicPartition(g.topic, p) for g in topology.global_stores for p in range(partition_counts[g.topic])
        ]
        self._state = GlobalStateManager(
            app_dir, {g.store: g.topic for g in topology.global_stores}, chunk_records=chunk_records
        )
        self._commit_interval_s = commit_interval_ms / 1000
        self._chunk_records = chunk_records
        self.restored_records = 0  # read by the last start's restoration (from the stores' offsets on)
        self.done: asyncio.Task[None] | None = None
        self._checkpointing: asyncio.Future[None] | None = None  # a checkpoint running in a worker thread

    @property
    def stores(self) -> dict[str, RocksDBStore]:
        return self._state.stores

    async def start(self) -> None:
        """Start the consumer, restore the global stores to the topics' end, then follow the topics."""
        try:
            await self._consumer.start()
            await self._restore()
        except BaseException:
            await self.close(clean=False)
            raise
        self.done = asyncio.create_task(self._follow(), name="streamlet-global-stream-thread")

    async def _restore(self) -> None:
        consumer, state = self._consumer, self._state
        consumer.assign(self._partitions)
        for tp in self._partitions:
            offset = state.checkpointed_offset(tp)
            if offset is not None:  # else the consumer starts at the beginning (auto_offset_reset=earliest)
                consumer.seek(tp, offset)
        ends = await consumer.end_offsets(self._partitions)
        pending = set(self._partitions)
        while pending:
            data = await consumer.getmany(*pending, timeout_ms=POLL_MS, max_records=self._chunk_records)
            for tp, records in data.items():
                state.apply(tp, records)
                self.restored_records += len(records)
            for tp in list(pending):
                position = await consumer.position(tp)
                if position >= ends[tp]:
                    state.advance(tp, position)
                    pending.discard(tp)
            await asyncio.sleep(0)  # a restore chunk holds the GIL inside RocksDB; let others run
        await self._checkpoint()
        log.info(
            "global stores %s restored: %d records read from %d partitions",
            ", ".join(sorted(state.stores)),
            self.restored_records,
            len(self._partitions),
        )

    async def _follow(self) -> None:
        consumer, state = self._consumer, self._state
        loop = asyncio.get_running_loop()
        next_checkpoint = loop.time() + self._commit_interval_s
        while True:
            data = await consumer.getmany(timeout_ms=POLL_MS, max_records=self._chunk_records)
            for tp, records in data.items():
                state.apply(tp, records)
            if loop.time() >= next_checkpoint:
                await self._checkpoint()
                next_checkpoint = loop.time() + self._commit_interval_s

    async def _checkpoint(self) -> None:
        """Flush and checkpoint in a worker thread, with the offsets as they are now; `close()` waits for it
        even when the task is cancelled meanwhile, so the stores are never closed under a flush."""
        state = self._state
        self._checkpointing = asyncio.ensure_future(asyncio.to_thread(state.checkpoint, state.offsets()))
        await asyncio.shield(self._checkpointing)

    async def close(self, *, clean: bool = True) -> None:
        """Stop following (cancel and await the task), checkpoint if clean, close the stores and the consumer."""
        task, self.done = self.done, None
        failed = False
        if task is not None:
            task.cancel()
            await asyncio.wait([task])
            failed = not task.cancelled() and task.exception() is not None
        if self._checkpointing is not None:
            await asyncio.wait([self._checkpointing])
        try:
            await asyncio.to_thread(self._state.close, clean=clean and not failed)
        finally:
            await self._consumer.stop()
