"""Broker script logic that needs no broker: error messages, readiness probe against a closed port."""

from __future__ import annotations

import concurrent.futures
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
        broker_mod.kafka_libs(broker_mod.KAFKA_VERSION)


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


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_preferred_port_is_used_when_free() -> None:
    port = _unused_port()
    assert broker_mod.choose_port("127.0.0.1", None, port) == port


def test_taken_preferred_port_falls_back_to_a_free_one() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        chosen = broker_mod.choose_port("127.0.0.1", None, taken)
        assert chosen != taken
        assert broker_mod._port_free("127.0.0.1", chosen)


def test_requested_port_wins_over_preferred() -> None:
    assert broker_mod.choose_port("127.0.0.1", 12345, 9092) == 12345


def test_library_broker_prefers_no_port(tmp_path) -> None:
    """The test session's broker (tests/conftest.py) is built this way: it must not take 9092."""
    assert LocalBroker(tmp_path / "b").preferred_port is None


def _fake_start(seen: list[LocalBroker], port: int):
    def start(self: LocalBroker, timeout: float = 120.0) -> broker_mod.BrokerStatus:
        seen.append(self)
        return broker_mod.BrokerStatus(
            pid=1, host="127.0.0.1", port=port, controller_port=1, kafka_version=broker_mod.KAFKA_VERSION,
            data_dir="d", log_file="l", started_at=0.0,
        )  # fmt: skip

    return start


def test_cli_start_prefers_9092_and_prints_the_export_line(monkeypatch, tmp_path, capsys) -> None:
    from streamlet import cli

    seen: list[LocalBroker] = []
    monkeypatch.setattr(LocalBroker, "start", _fake_start(seen, 9092))
    assert cli.main(["broker", "start", "--dir", str(tmp_path)]) == 0
    assert seen[0].preferred_port == 9092 and seen[0].requested_port is None
    out, err = capsys.readouterr()
    assert out == "export STREAMLET_BOOTSTRAP_SERVERS=127.0.0.1:9092\n"
    assert "clients default to" not in err


def test_cli_start_on_another_port_says_to_export(monkeypatch, tmp_path, capsys) -> None:
    from streamlet import cli

    monkeypatch.setattr(LocalBroker, "start", _fake_start([], 40123))
    assert cli.main(["broker", "start", "--dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == "export STREAMLET_BOOTSTRAP_SERVERS=127.0.0.1:40123\n"
    assert "clients default to 127.0.0.1:9092" in err


def test_a_secured_broker_keeps_its_secrets_in_owner_only_files(tmp_path) -> None:
    broker = LocalBroker(tmp_path, security="sasl_ssl")
    props = broker._security_properties(19000, 19001)
    assert props["listeners"] == "SASL_SSL://127.0.0.1:19000,CONTROLLER://127.0.0.1:19001"
    assert props["listener.security.protocol.map"] == "SASL_SSL:SASL_SSL,CONTROLLER:SSL"
    assert props["super.users"] == "User:localhost;User:admin;User:streamlet"
    password_file = broker.tls_dir / "streamlet.password"
    assert password_file.stat().st_mode & 0o077 == 0 and (broker.tls_dir / "client.key").stat().st_mode & 0o077 == 0
    status = broker_mod.BrokerStatus(
        1, "127.0.0.1", 19000, 19001, broker_mod.KAFKA_VERSION, str(tmp_path / "data"), "", 0.0, "sasl_ssl"
    )
    settings = status.client_settings()
    assert settings["STREAMLET_SASL_PLAIN_PASSWORD_FILE"] == str(password_file)
    assert password_file.read_text().strip() not in "".join(settings.values())
    assert status.client_settings("limited")["STREAMLET_SASL_PLAIN_USERNAME"] == "limited"


def test_a_mutual_tls_broker_requires_client_certificates(tmp_path) -> None:
    props = LocalBroker(tmp_path, security="ssl")._security_properties(19000, 19001)
    assert props["ssl.client.auth"] == "required" and "sasl.enabled.mechanisms" not in props
    with pytest.raises(BrokerError, match="security='tls': expected one of plaintext, sasl_ssl, ssl"):
        LocalBroker(tmp_path, security="tls")


def _fake_mvn(tmp_path, body: str):
    """An `mvn` that records each run and then does `body` (a shell snippet; $out is -DoutputDirectory's value)."""
    script = tmp_path / "mvn"
    script.write_text(
        "#!/bin/sh\n"
        f'echo run >> "{tmp_path}/runs"\n'
        'for arg in "$@"; do case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac; done\n'
        f"{body}\n"
    )
    script.chmod(0o755)
    return str(script)


def test_processes_that_start_brokers_at_once_download_the_jars_once(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("STREAMLET_CACHE_DIR", str(tmp_path / "cache"))
    mvn = _fake_mvn(tmp_path, 'sleep 0.5; mkdir -p "$out"; touch "$out/kafka_2.13-9.9.9.jar"')
    monkeypatch.setattr(broker_mod.shutil, "which", lambda name: mvn)
    with concurrent.futures.ThreadPoolExecutor(3) as pool:  # flock excludes each open() of the lock file
        found = list(pool.map(lambda _: broker_mod.kafka_libs("9.9.9"), range(3)))
    assert (tmp_path / "runs").read_text().splitlines() == ["run"]
    assert len(set(found)) == 1 and (found[0] / "kafka_2.13-9.9.9.jar").is_file()


def test_a_stuck_download_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("STREAMLET_CACHE_DIR", str(tmp_path / "cache"))
    mvn = _fake_mvn(tmp_path, "exec sleep 30")
    monkeypatch.setattr(broker_mod.shutil, "which", lambda name: mvn)
    monkeypatch.setattr(broker_mod, "DOWNLOAD_TIMEOUT_S", 0.5)
    with pytest.raises(BrokerError, match=r"downloading Kafka 9\.9\.9 from Maven Central did not finish within 0 s"):
        broker_mod.kafka_libs("9.9.9")


def test_the_broker_jvm_options_come_from_the_environment_or_default_to_g1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(broker_mod.BROKER_JVM_OPTIONS_ENV, raising=False)
    assert broker_mod.broker_jvm_options() == ["-XX:+UseG1GC"]
    monkeypatch.setenv(broker_mod.BROKER_JVM_OPTIONS_ENV, "-XX:+UseSerialGC  -Dname='a b'")
    assert broker_mod.broker_jvm_options() == ["-XX:+UseSerialGC", "-Dname=a b"]
    monkeypatch.setenv(broker_mod.BROKER_JVM_OPTIONS_ENV, "")  # set but empty: the JVM's own defaults
    assert broker_mod.broker_jvm_options() == []
