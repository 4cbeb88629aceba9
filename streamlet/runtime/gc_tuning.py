"""The garbage collector's settings for a process that runs a worker.

A worker allocates container objects in bursts: a fetched batch becomes hundreds of records at once, and
each record a few tuples on its way through the graph. With CPython's default thresholds (700, 10, 10) such
a burst sets off several young collections, the batch's records survive them (they are still queued), so
they are promoted and traversed again by the older generations, and every full collection also traverses
every object the imports and the topology made at start-up: hundreds of thousands that live for the whole
run and are never garbage. Reference counting frees the records; the collector finds nothing.

So the worker freezes what exists once it has started (`gc.freeze()`: those objects are never traversed
again) and raises the young generation's threshold so that a burst is freed by reference counting before a
collection looks at it. Cycles are still collected, only less often. A process that embeds `KafkaStreams`
itself keeps its own settings: this is for the `streamlet worker` command, which owns the process.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: young-generation threshold: a few fetched batches (`max_poll_records` 1,000 per thread) of allocations
GEN0_THRESHOLD = 50_000
#: collections of a generation before the next one is collected too (CPython's default is 10 for both)
GEN1_THRESHOLD = 20
GEN2_THRESHOLD = 20


@contextlib.contextmanager
def worker_gc() -> Iterator[None]:
    """Freeze the objects made so far and raise the thresholds; on exit, the previous settings again."""
    previous = gc.get_threshold()
    gc.collect()  # start-up's garbage goes first, not into the frozen set
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, GEN1_THRESHOLD, GEN2_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
