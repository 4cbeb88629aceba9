"""One Kafka version for the whole project, a selectable broker release, and the storage-version guard."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamlet.errors import BrokerError
from streamlet.kafka import broker as broker_mod
from streamlet.kafka.broker import KAFKA_VERSION, OLDEST_SUPPORTED_KAFKA_VERSION, check_storage_version

REPO = Path(__file__).resolve().parents[3]
# every Maven project that resolves Kafka: the broker, both oracles, the bench peers
POMS = [
    REPO / "streamlet" / "kafka" / "broker-pom.xml",
    REPO / "oracle" / "pom.xml",
    REPO / "oracle" / "semantics" / "pom.xml",
    REPO / "bench" / "kafka-streams" / "pom.xml",
]


@pytest.mark.parametrize("pom", POMS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_pom_resolves_the_projects_kafka_version(pom: Path) -> None:
    versions = re.findall(r"<kafka\.version>([^<]+)</kafka\.version>", pom.read_text())
    assert versions == [KAFKA_VERSION]


def test_the_broker_release_is_selectable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMLET_KAFKA_VERSION", raising=False)
    assert broker_mod.selected_kafka_version() == KAFKA_VERSION
    assert broker_mod.LocalBroker("/nonexistent").kafka_version == KAFKA_VERSION
    monkeypatch.setenv("STREAMLET_KAFKA_VERSION", OLDEST_SUPPORTED_KAFKA_VERSION)
    assert broker_mod.LocalBroker("/nonexistent").kafka_version == OLDEST_SUPPORTED_KAFKA_VERSION
    assert broker_mod.LocalBroker("/nonexistent", kafka_version="4.3.1").kafka_version == "4.3.1"


def test_a_malformed_release_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMLET_KAFKA_VERSION", "latest")
    with pytest.raises(BrokerError, match="STREAMLET_KAFKA_VERSION='latest'"):
        broker_mod.selected_kafka_version()


def test_an_older_broker_is_refused_on_data_a_newer_one_formatted(tmp_path: Path) -> None:
    (tmp_path / "formatted-by-kafka").write_text("4.4.0\n")
    with pytest.raises(BrokerError, match=r"formatted by Kafka 4\.4\.0, which Kafka 4\.1\.1 cannot read"):
        check_storage_version(tmp_path, "4.1.1")
    with pytest.raises(BrokerError, match="formatted by Kafka 4.4.0"):
        check_storage_version(tmp_path, "3.9.1")
    check_storage_version(tmp_path, "4.4.0")
    check_storage_version(tmp_path, "4.10.0")  # releases compare as numbers, not strings


def test_data_of_unknown_origin_is_left_to_the_broker(tmp_path: Path) -> None:
    check_storage_version(tmp_path, "3.9.1")
