"""The brokers' class archive on a real JVM: the first broker of a set of JVM options has it written, and maps it.

The test's options carry a property of their own, so the archive is made for this test (not found from an earlier
run), and `-Xshare:on`, with which a JVM that cannot map its archive refuses to start instead of starting without.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from streamlet.kafka.broker import BROKER_JVM_OPTIONS_ENV, LocalBroker, broker_jvm_options
from tests.support.broker import TEST_BROKER_SETTINGS
from tests.support.waiting import free_port

pytestmark = pytest.mark.integration
MAP = "-XX:SharedArchiveFile="


def test_the_first_broker_has_the_class_archive_written_and_maps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = [*broker_jvm_options(), "-Xshare:on", f"-Dstreamlet.test.class-archive={uuid.uuid4().hex}"]
    monkeypatch.setenv(BROKER_JVM_OPTIONS_ENV, " ".join(options))
    broker = LocalBroker(tmp_path / "broker", port=free_port(), die_with_parent=True, overrides=TEST_BROKER_SETTINGS)
    archive: Path | None = None
    try:
        status = broker.start()
        command = Path(f"/proc/{status.pid}/cmdline").read_bytes().decode().split("\0")
        [mapped] = [arg.removeprefix(MAP) for arg in command if arg.startswith(MAP)]
        archive = Path(mapped)
        assert archive.stat().st_size > 10_000_000  # Kafka's classes, written by the broker started before this one
        assert list(archive.parent.glob(f"{archive.stem}.*")) == [archive]  # no claim or partial file left beside it
    finally:
        broker.stop()
        if archive is not None:
            archive.unlink()
