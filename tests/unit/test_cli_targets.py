"""What a new user types first: a file path as the worker target, and Faust's setting names."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from streamlet import App, cli
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError, StreamletError

APP_FILE = """
from helper import TOPIC  # a sibling module: the file's directory is importable

from streamlet import App

app = App("from-a-file")
app.stream(TOPIC, key_serde="str", value_serde="str").to("file-out")
"""


def _write_app(directory: Path) -> Path:
    (directory / "helper.py").write_text('TOPIC = "file-in"\n')
    script = directory / "orders_app_file.py"
    script.write_text(textwrap.dedent(APP_FILE))
    return script


def test_a_file_path_target_loads_the_file(tmp_path: Path) -> None:
    target = cli.load_target(f"{_write_app(tmp_path)}:app")
    assert isinstance(target, App)
    assert target.application_id == "from-a-file"


def test_topology_describe_of_a_file_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["topology", "describe", f"{_write_app(tmp_path)}:app"]) == 0
    out = capsys.readouterr().out
    assert "Source: KSTREAM-SOURCE-0000000000 (topics: [file-in])" in out
    assert "(topic: file-out)" in out


def test_a_missing_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.py"
    assert cli.main(["topology", "describe", f"{missing}:app"]) == 2
    err = capsys.readouterr().err
    assert f"no such file: '{missing}'" in err
    assert "Traceback" not in err


def test_a_target_without_an_attribute_shows_both_spellings() -> None:
    with pytest.raises(StreamletError, match=r"MODULE:ATTRIBUTE or FILE\.py:ATTRIBUTE.*got 'app\.py'"):
        cli.load_target("app.py")


def test_fausts_broker_setting_points_to_bootstrap_servers() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown config 'broker' \(Faust's 'broker': in streamlet, use bootstrap_servers"
    ):
        App("orders", broker="kafka://localhost:9092")


@pytest.mark.parametrize(
    ("faust_name", "streamlet_name"),
    [("datadir", "state_dir"), ("table_standby_replicas", "num_standby_replicas"), ("web_bind", "web_host")],
)
def test_other_faust_settings_are_translated(faust_name: str, streamlet_name: str) -> None:
    with pytest.raises(ConfigError, match=f"use {streamlet_name}"):
        StreamsConfig.from_mapping({"application_id": "a", faust_name: "x"})


def test_a_typo_still_gets_the_closest_setting() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown config 'num_stream_thread' \(did you mean 'num_stream_threads'\?\)"
    ):
        StreamsConfig.from_mapping({"application_id": "a", "num_stream_thread": 2})
