"""Broker script logic that needs no broker: error messages, readiness probe against a closed port."""

from __future__ import annotations

import socket

import pytest

from streamlet.errors import BrokerError
from streamlet.kafka import broker as broker_mod
from streamlet.kafka.broker import LocalBroker, broker_answers


def test_probe_of_closed_port_is_false() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert broker_answers("127.0.0.1", port, timeout=0.5) is False


def test_missing_java_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_mod.shutil, "which", lambda name: None)
    with pytest.raises(BrokerError, match="Java 17"):
        broker_mod.check_java()


def test_missing_maven_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("STREAMLET_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(broker_mod.shutil, "which", lambda name: None)
    with pytest.raises(BrokerError, match="mvn not found"):
        broker_mod.kafka_libs("4.1.1")


def test_bad_kafka_home_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("KAFKA_HOME", str(tmp_path))
    with pytest.raises(BrokerError, match="KAFKA_HOME"):
        broker_mod.kafka_libs()


def test_taken_port_is_reported(tmp_path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(BrokerError, match=f"port {port}"):
            LocalBroker(tmp_path / "b", port=port).start(timeout=5)


def test_status_without_broker_is_none(tmp_path) -> None:
    broker = LocalBroker(tmp_path / "b")
    assert broker.status() is None
    assert broker.stop() is False


def test_cluster_ids_never_start_with_a_dash() -> None:
    ids = [broker_mod._new_cluster_id() for _ in range(2000)]
    assert all(not i.startswith("-") and len(i) == 22 for i in ids)
