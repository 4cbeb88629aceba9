"""Restoration progress: the tracker's numbers and the INFO lines of the default listener."""

from __future__ import annotations

import logging

import pytest
from aiokafka.structs import TopicPartition

from streamlet.runtime.restore_listener import (
    CompositeRestoreListener,
    LoggingRestoreListener,
    RestoreProgress,
    RestoreProgressTracker,
    format_eta,
)

TP = TopicPartition("app-counts-changelog", 3)


def test_progress_is_measured_in_offsets_and_the_rate_in_records() -> None:
    progress = RestoreProgress("counts", TP, start_offset=0, end_offset=4000, started=0.0)
    assert (progress.fraction, progress.remaining, progress.eta_s(5.0)) == (0.0, 4000, None)
    progress.restored, progress.position = 900, 1000  # a compacted changelog: gaps between offsets
    assert progress.fraction == 0.25 and progress.remaining == 3000
    assert progress.rate(2.0) == 450.0  # records per second
    assert progress.eta_s(2.0) == 6.0  # 3000 offsets at 500 offsets/s
    empty = RestoreProgress("counts", TP, start_offset=10, end_offset=10)
    assert empty.fraction == 1.0 and empty.total == 0


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "?"), (0.4, "0s"), (59, "59s"), (61, "1m01s"), (3600 * 2 + 60 * 5, "2h05m")]
)
def test_eta_text(seconds: float | None, text: str) -> None:
    assert format_eta(seconds) == text


def test_the_tracker_follows_start_batches_and_end_or_suspension() -> None:
    tracker = RestoreProgressTracker()
    other = TopicPartition("app-counts-changelog", 4)
    tracker.on_restore_start(TP, "counts", 100, 300)
    tracker.on_restore_start(other, "counts", 0, 50)
    tracker.on_batch_restored(TP, "counts", batch_end_offset=149, num_restored=50)
    [first, second] = tracker.in_progress()
    assert (first.partition, first.restored, first.position, first.remaining) == (TP, 50, 150, 150)
    assert second.partition == other
    tracker.on_restore_end(TP, "counts", 200)
    CompositeRestoreListener(tracker).on_restore_suspended(other, "counts", 0)
    assert tracker.in_progress() == []


def test_the_tracker_keeps_what_finished_restorations_restored() -> None:
    tracker = RestoreProgressTracker()
    tracker.on_restore_start(TP, "counts", 0, 100)
    tracker.on_batch_restored(TP, "counts", batch_end_offset=59, num_restored=60)
    tracker.on_restore_end(TP, "counts", 60)
    assert tracker.restored_totals() == {(TP, "counts"): 60}
    tracker.on_restore_start(TP, "counts", 60, 100)  # the task came back later: counts add up
    tracker.on_batch_restored(TP, "counts", batch_end_offset=69, num_restored=7)
    assert tracker.restored_totals() == {(TP, "counts"): 67}
    tracker.on_restore_suspended(TP, "counts", 7)
    assert tracker.restored_totals() == {(TP, "counts"): 67} and tracker.in_progress() == []


def test_the_default_listener_logs_percentage_rate_and_eta(caplog: pytest.LogCaptureFixture) -> None:
    listener = LoggingRestoreListener(interval=0.0)
    with caplog.at_level(logging.INFO, logger="streamlet.restore"):
        listener.on_restore_start(TP, "counts", 0, 2000)
        listener.on_batch_restored(TP, "counts", batch_end_offset=499, num_restored=500)
        listener.on_restore_end(TP, "counts", 2000)
    start, progress, end = [r.getMessage() for r in caplog.records]
    assert start == "restoring store counts from app-counts-changelog-3 offsets 0..2000 (2000 records)"
    assert progress.startswith("restoring store counts from app-counts-changelog-3: 500/2000 records (25%), ")
    assert " records/s, ETA " in progress and not progress.endswith("ETA ?")
    assert end.startswith("restored store counts from app-counts-changelog-3: 2000 records in ")
    assert listener.in_progress() == []


def test_the_tracker_counts_restored_bytes_through_finished_and_running_restorations() -> None:
    tracker = RestoreProgressTracker()
    other = TopicPartition("app-counts-changelog", 4)
    composite = CompositeRestoreListener(tracker, LoggingRestoreListener())  # forwards the optional callback
    composite.on_restore_start(TP, "counts", 0, 100)
    composite.on_bytes_restored(TP, "counts", 600)
    composite.on_batch_restored(TP, "counts", batch_end_offset=59, num_restored=60)
    composite.on_restore_end(TP, "counts", 60)
    composite.on_restore_start(TP, "counts", 60, 100)
    composite.on_bytes_restored(TP, "counts", 70)
    composite.on_restore_start(other, "counts", 0, 10)
    composite.on_bytes_restored(other, "counts", 5)
    composite.on_bytes_restored(TopicPartition("unknown", 0), "counts", 99)  # not restoring: ignored
    assert tracker.restored_bytes_totals() == {(TP, "counts"): 670, (other, "counts"): 5}
