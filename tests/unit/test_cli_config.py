"""`streamlet worker` configuration precedence: flag > --config > App(...) > environment > default."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streamlet import app_commands, cli
from streamlet.app_commands import resolve_worker_config
from streamlet.config import DEFAULT_BOOTSTRAP_SERVERS, StreamsConfig
from streamlet.errors import ConfigError
from streamlet.topology import StreamsBuilder

ENV = {"STREAMLET_BOOTSTRAP_SERVERS": "env:9092"}
NO_FLAGS: dict[str, Any] = {"--state-dir": None, "--threads": None, "--bootstrap-servers": None}


def effective(settings: dict[str, Any]) -> StreamsConfig:
    return StreamsConfig.from_mapping({"application_id": "app", **settings})


def test_default_when_no_level_sets_it() -> None:
    settings = resolve_worker_config(NO_FLAGS, [], {}, {})
    assert settings == {"bootstrap_servers": DEFAULT_BOOTSTRAP_SERVERS}
    assert effective(settings).num_stream_threads == 1


def test_environment_beats_default_and_empty_means_unset() -> None:
    assert resolve_worker_config(NO_FLAGS, [], {}, ENV)["bootstrap_servers"] == "env:9092"
    empty = {"STREAMLET_BOOTSTRAP_SERVERS": ""}
    assert resolve_worker_config(NO_FLAGS, [], {}, empty)["bootstrap_servers"] == DEFAULT_BOOTSTRAP_SERVERS


def test_app_config_beats_environment() -> None:
    settings = resolve_worker_config(NO_FLAGS, [], {"bootstrap_servers": "app:9092", "num_stream_threads": 2}, ENV)
    assert settings["bootstrap_servers"] == "app:9092"
    assert settings["num_stream_threads"] == 2


def test_config_pairs_beat_app_config_and_are_not_masked_by_unset_flags() -> None:
    pairs = ["num_stream_threads=3", "state_dir=/srv/state", "bootstrap_servers=cfg:9092"]
    app = {"num_stream_threads": 2, "state_dir": "/app/state", "bootstrap_servers": "app:9092"}
    settings = resolve_worker_config(NO_FLAGS, pairs, app, ENV)
    assert settings == {"num_stream_threads": 3, "state_dir": "/srv/state", "bootstrap_servers": "cfg:9092"}


def test_dotted_config_names_override_the_same_setting() -> None:
    settings = resolve_worker_config(NO_FLAGS, ["num.stream.threads=3"], {"num_stream_threads": 2}, {})
    assert settings["num_stream_threads"] == 3
    assert "num.stream.threads" not in settings


def test_flags_beat_every_lower_level() -> None:
    flags = {"--state-dir": "/flag/state", "--threads": 4, "--bootstrap-servers": "flag:9092"}
    app = {"num_stream_threads": 2, "state_dir": "/app/state", "bootstrap_servers": "app:9092"}
    settings = resolve_worker_config(flags, ["commit_interval_ms=100"], app, ENV)
    assert settings == {
        "num_stream_threads": 4,
        "state_dir": "/flag/state",
        "bootstrap_servers": "flag:9092",
        "commit_interval_ms": 100,
    }


def test_flag_and_config_agreeing_is_fine() -> None:
    settings = resolve_worker_config({**NO_FLAGS, "--threads": 3}, ["num_stream_threads=3"], {}, {})
    assert settings["num_stream_threads"] == 3


def test_flag_and_config_disagreeing_is_an_error_naming_both() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_worker_config({**NO_FLAGS, "--threads": 3}, ["num.stream.threads=2"], {}, {})
    assert "--threads 3" in str(info.value)
    assert "--config num.stream.threads=2" in str(info.value)


def test_config_given_twice_with_different_values_is_an_error() -> None:
    with pytest.raises(ConfigError, match="state_dir=/a.*state.dir=/b"):
        resolve_worker_config(NO_FLAGS, ["state_dir=/a", "state.dir=/b"], {}, {})


def test_config_values_are_typed_by_field() -> None:
    settings = resolve_worker_config(NO_FLAGS, ["dead_letter_topic=123", "max_poll_records=50"], {}, {})
    assert settings["dead_letter_topic"] == "123"
    assert settings["max_poll_records"] == 50
    with pytest.raises(ConfigError, match="num_stream_threads must be an integer, got 'two'"):
        resolve_worker_config(NO_FLAGS, ["num_stream_threads=two"], {}, {})
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        resolve_worker_config(NO_FLAGS, ["num_stream_threads"], {}, {})


class _FakeApp:
    """Stands in for an App: keyword config in `settings`, records what `run_worker` receives."""

    application_id = "fake"

    def __init__(self, **config: Any) -> None:
        self.settings = config
        self.overrides: dict[str, Any] | None = None
        self.worker_timers: bool | None = None

    async def run_worker(self, *, worker_timers: bool = True, **overrides: Any) -> None:
        self.overrides = overrides
        self.worker_timers = worker_timers


@pytest.fixture
def fake_worker(monkeypatch: pytest.MonkeyPatch) -> tuple[_FakeApp, list[object]]:
    app = _FakeApp(num_stream_threads=2, state_dir="/app/state")
    installed: list[object] = []
    monkeypatch.setattr(cli, "_app_of", lambda spec, application_id: app)

    @contextlib.contextmanager
    def repeat_filtered(handlers: object) -> Iterator[None]:
        installed.append(handlers)
        yield

    monkeypatch.setattr(app_commands, "repeat_filtered", repeat_filtered)
    monkeypatch.setenv("STREAMLET_BOOTSTRAP_SERVERS", "env:9092")
    return app, installed


def test_worker_command_passes_the_resolved_config(fake_worker: tuple[_FakeApp, list[object]]) -> None:
    app, installed = fake_worker
    assert cli.main(["worker", "m:app", "--config", "num_stream_threads=3", "--config", "state_dir=/cfg"]) == 0
    assert app.overrides == {"num_stream_threads": 3, "state_dir": "/cfg", "bootstrap_servers": "env:9092"}
    assert len(installed) == 1  # the worker's logging gets the repeat filter


def test_worker_command_with_process_per_thread_runs_each_thread_as_a_client_of_its_own(
    fake_worker: tuple[_FakeApp, list[object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    app, _ = fake_worker
    supervised: list[int] = []

    def supervise(run_process: Callable[[int], int], count: int, log_format: str) -> int:
        supervised.append(count)
        return run_process(1)  # what the second forked process runs

    monkeypatch.setattr(app_commands, "supervise", supervise)
    assert cli.main(["worker", "m:app", "--process-per-thread", "--threads", "3", "--state-dir", "/s"]) == 0
    assert supervised == [3]
    assert app.overrides is not None
    assert (app.overrides["num_stream_threads"], app.overrides["state_dir"]) == (1, "/s/process-1")
    assert app.worker_timers is False  # the first process runs the timers every worker runs
    # one thread: nothing to split
    assert cli.main(["worker", "m:app", "--process-per-thread", "--threads", "1"]) == 0
    assert supervised == [3] and app.overrides["num_stream_threads"] == 1 and app.worker_timers is True


def test_worker_command_reports_a_conflict(
    fake_worker: tuple[_FakeApp, list[object]], capsys: pytest.CaptureFixture[str]
) -> None:
    app, _ = fake_worker
    assert cli.main(["worker", "m:app", "--state-dir", "/flag", "--config", "state_dir=/cfg"]) == 2
    err = capsys.readouterr().err
    assert "--state-dir /flag" in err and "--config state_dir=/cfg" in err
    assert app.overrides is None


@pytest.mark.parametrize("command", [["topics", "create", "t"], ["produce", "t"], ["consume", "t"]])
def test_other_commands_resolve_bootstrap_servers_when_they_run(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = cli.build_parser().parse_args(command)
    assert args.bootstrap_servers is None  # no parse-time default to mask the environment
    monkeypatch.setenv("STREAMLET_BOOTSTRAP_SERVERS", "env:9092")
    monkeypatch.setenv("STREAMLET_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("STREAMLET_SASL_PLAIN_USERNAME", "u")
    monkeypatch.setenv("STREAMLET_SASL_PLAIN_PASSWORD", "p")
    assert cli._cluster(args).bootstrap_servers == "env:9092"
    assert cli._cluster(args).security.client_kwargs()["sasl_plain_password"] == "p"  # security from the env too
    monkeypatch.delenv("STREAMLET_BOOTSTRAP_SERVERS")
    assert cli._cluster(args).bootstrap_servers == DEFAULT_BOOTSTRAP_SERVERS
    flagged = cli.build_parser().parse_args([*command, "--bootstrap-servers", "flag:9092"])
    assert cli._cluster(flagged).bootstrap_servers == "flag:9092"


def test_cleanup_command_wipes_the_state_dir_the_worker_would_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    topology = builder.build()
    monkeypatch.setattr(cli, "load_target", lambda spec: topology)
    task_dir = tmp_path / "cfg" / "wc" / "0_0"
    task_dir.mkdir(parents=True)
    (task_dir / ".checkpoint").write_text("x")
    assert (
        cli.main(["cleanup", "m:topology", "--application-id", "wc", "--config", f"state_dir={tmp_path / 'cfg'}"]) == 0
    )
    assert not task_dir.exists()


def test_leave_flag_sets_leave_group_on_close() -> None:
    assert resolve_worker_config({**NO_FLAGS, "--leave": True}, [], {}, {})["leave_group_on_close"] is True
    assert "leave_group_on_close" not in resolve_worker_config(NO_FLAGS, [], {}, {})


def test_web_port_flag_sets_the_web_server_and_the_default_application_server() -> None:
    settings = resolve_worker_config({**NO_FLAGS, "--web-port": 6066}, [], {}, {})
    assert settings["web_port"] == 6066
    config = StreamsConfig.from_mapping({"application_id": "a", **settings})
    assert (config.web_host, config.application_server) == ("127.0.0.1", "127.0.0.1:6066")
    # an explicit application_server (e.g. a name other hosts can reach) is kept
    settings = resolve_worker_config(
        {**NO_FLAGS, "--web-port": 6066, "--web-host": "0.0.0.0"}, ["application_server=w1.example:6066"], {}, {}
    )
    config = StreamsConfig.from_mapping({"application_id": "a", **settings})
    assert (config.web_host, config.application_server) == ("0.0.0.0", "w1.example:6066")
    assert StreamsConfig(application_id="a").application_server == ""  # no web port: no application_server


def test_web_port_is_checked() -> None:
    with pytest.raises(ConfigError, match="web_port must be <= 65535"):
        StreamsConfig(application_id="a", web_port=70000)
    with pytest.raises(ConfigError, match="web_port must be >= 0"):
        StreamsConfig(application_id="a", web_port=-1)
