"""What the report's Spark job (`streamlet.spark.experiment_events`) computes over one run's metrics events.

Plain data, so the HTML report and its tests need neither Spark nor a JVM.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunAggregates:
    """What Spark computed over one run's metrics events; times are seconds since `origin_ms`."""

    origin_ms: int
    bucket_s: float
    events: int = 0
    throughput: list[tuple[float, float]] = field(default_factory=list)  # (t, records/s, all clients)
    load: dict[str, list[tuple[float, float]]] = field(default_factory=dict)  # client -> (t, records/s)
    lag: list[tuple[float, int]] = field(default_factory=list)  # (t, consumer lag, all clients)
    pauses: list[tuple[int, str, float]] = field(default_factory=list)  # (round, task, seconds not RUNNING)
    restored: dict[tuple[int, str, int], int] = field(default_factory=dict)  # (round, client, partition) -> records
    restored_recorded: bool = False  # the events carry restored_total (older workers' do not)
    # (round, client, partition) -> key + value bytes of the records restored (version 2 events)
    restored_bytes: dict[tuple[int, str, int], int] = field(default_factory=dict)
    restored_bytes_recorded: bool = False  # the events carry restored_bytes_total (version 1 ones do not)
