"""bench/recovery.py's pure parts: reading each peer's restoration from its log, same-round ratios, the goals."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import recovery  # noqa: E402

KS_LOG = """\
[main] INFO org.apache.kafka.streams.StreamsConfig - StreamsConfig values:
\tenable.transactional.statestores = true
STATE REBALANCING 1795774815351
RESTORE_START 1795774817190 app-counts-store-changelog-0 1200 13588
RESTORE_START 1795774817191 app-counts-store-changelog-1 0 500
RESTORE_END 1795774817739 app-counts-store-changelog-0 12372
RESTORE_END 1795774817740 app-counts-store-changelog-1 498
STATE RUNNING 1795774818000
"""


def test_kafka_streams_restoration_sums_the_listener_totals_and_spans() -> None:
    peer = recovery.kafka_streams_peer("4.4.0", "transactional")
    got = peer.restoration(KS_LOG, 1795774815.0)
    assert got["records_restored"] == 12372 + 498
    assert got["restore_offset_span"] == (13588 - 1200) + 500
    assert got["count_task_running_s"] == 3.0


def test_kafka_streams_restoration_refuses_a_peer_whose_config_is_not_transactional() -> None:
    peer = recovery.kafka_streams_peer("4.4.0", "transactional")
    with pytest.raises(RuntimeError, match="enable.transactional.statestores"):
        peer.restoration(KS_LOG.replace("statestores = true", "statestores = false"), 0.0)


def test_the_default_peer_must_run_with_the_setting_at_its_default() -> None:
    peer = recovery.kafka_streams_peer("4.4.0", "default")
    assert peer.name == "Kafka Streams 4.4.0 (default)"
    default_log = KS_LOG.replace("statestores = true", "statestores = false")
    assert peer.restoration(default_log, 1795774815.0)["records_restored"] == 12372 + 498
    with pytest.raises(RuntimeError, match="enable.transactional.statestores"):
        peer.restoration(KS_LOG, 0.0)


def test_a_wipe_peer_with_nothing_restored_reads_zero() -> None:
    peer = recovery.kafka_streams_peer("4.1.1", "wipe")
    got = peer.restoration("STATE RUNNING 1000\n", 0.0)
    assert (got["records_restored"], got["restore_offset_span"], got["count_task_running_s"]) == (0, 0, 1.0)


def test_streamlet_restoration_reads_its_logging_restore_listener() -> None:
    restarted = time.mktime(time.strptime("2026-11-27 10:16:07", "%Y-%m-%d %H:%M:%S"))
    text = (
        "2026-11-27 10:16:08,000 INFO streamlet.client started\n"
        "2026-11-27 10:16:08,143 INFO streamlet.restore restoring store counts-store from app-changelog-0 "
        "offsets 60000..74002 (14002 records)\n"
        "2026-11-27 10:16:09,144 INFO streamlet.restore restored store counts-store from app-changelog-0: "
        "14000 records in 1.00s (14000 records/s)\n"
        "2026-11-27 10:16:09,500 INFO streamlet.thread stream-thread [x] task 1_0 restored, now RUNNING\n"
    )
    got = recovery.streamlet_peer("after", Path(".")).restoration(text, restarted)
    assert (got["records_restored"], got["restore_offset_span"]) == (14000, 14002)
    assert got["process_started_s"] == 1.0
    assert got["count_task_running_s"] == 2.5


def row(peer: str, rnd: int, first: float, restored: int = 0, last: int = 0, open_txn: int = 0) -> dict[str, Any]:
    return {
        "peer": peer,
        "round": rnd,
        "status": "ok",
        "first_processed_s": first,
        "records_restored": restored,
        "last_commit_records": last,
        "changelog_since_commit_at_kill": open_txn,
    }


def test_ratios_pair_rounds_and_skip_failed_ones() -> None:
    results = [
        row("after", 1, 2.0),
        row("ks", 1, 8.0),
        row("after", 2, 4.0),
        row("ks", 2, 4.0),
        {"peer": "after", "round": 3, "status": "failed: x"},
        row("ks", 3, 100.0),
    ]
    assert recovery.ratios(results, "ks", "first_processed_s") == 2.5  # median of 4.0 and 1.0
    assert recovery.ratios(results, "nobody", "first_processed_s") is None


def test_goals_count_the_rounds_within_twice_the_records_since_the_last_commit() -> None:
    results = [
        row("after", 1, 2.0, restored=30_000, last=14_000, open_txn=1_000),
        row("after", 2, 2.0, restored=31_000, last=14_000, open_txn=1_000),
        row("ks", 1, 1.0),
        row("ks", 2, 1.0),
    ]
    restored, first = recovery.goals(results, "ks")
    assert "1 of 2 rounds" in restored
    assert first.startswith("goal first processed record <= ks's: not met (ks takes 0.50x")
