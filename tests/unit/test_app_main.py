"""`App.main()`: `python myapp.py worker -l info` as in Faust, with `streamlet worker`'s flags and precedence."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from streamlet import App
from streamlet.logging_utils import RepeatFilter

REPO = Path(__file__).resolve().parents[2]


def _capture(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    async def run_worker(self: App, **overrides: Any) -> None:
        calls.append(overrides)

    monkeypatch.setattr(App, "run_worker", run_worker)
    return calls


def test_worker_with_faust_style_log_level_runs_this_app(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture(monkeypatch)
    monkeypatch.delenv("STREAMLET_BOOTSTRAP_SERVERS", raising=False)
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: calls.append({"log": kw["level"]}))
    app = App("main-app", num_stream_threads=2)
    with pytest.raises(SystemExit) as exit_info:
        app.main(["worker", "-l", "debug", "--state-dir", "/tmp/x", "--config", "commit_interval_ms=500"])
    assert exit_info.value.code == 0
    assert calls[0] == {"log": logging.DEBUG}
    assert calls[1]["num_stream_threads"] == 2  # the App's own config
    assert calls[1]["state_dir"] == "/tmp/x" and calls[1]["commit_interval_ms"] == 500
    # the worker rate-limited aiokafka's records only while it ran: the host's handlers (here pytest's) are as before
    assert not [f for h in logging.getLogger().handlers for f in h.filters if isinstance(f, RepeatFilter)]


def test_loglevel_spellings_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _capture(monkeypatch)
    monkeypatch.setattr(logging, "basicConfig", lambda **kw: calls.append({"log": kw["level"]}))
    for flag in ("--loglevel", "--log-level"):
        with pytest.raises(SystemExit):
            App("main-app").main(["worker", flag, "warning"])
    assert [c["log"] for c in calls if "log" in c] == [logging.WARNING, logging.WARNING]


def test_the_app_takes_no_module_argument(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        App("main-app").main(["worker", "examples.wordcount.app:app"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: examples.wordcount.app:app" in capsys.readouterr().err


def test_python_myapp_topology_describe(tmp_path: Path) -> None:
    script = tmp_path / "myapp.py"
    script.write_text(
        textwrap.dedent(
            """
            from streamlet import App, Record

            class View(Record):
                user: str

            app = App("myapp")
            counts = app.Table("views", value_serde="int64", default=int)

            @app.agent(app.topic("views-in", value_type=View), tables=[counts])
            async def count(stream):
                async for view in stream.group_by(View.user, name="by-user"):
                    counts[view.user] += 1

            if __name__ == "__main__":
                app.main()
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(script), "topology", "describe"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Sink: by-user-repartition-sink (topic: by-user-repartition)" in done.stdout
    assert "Processor: KSTREAM-PROCESSOR-0000000005 (stores: [views])" in done.stdout
