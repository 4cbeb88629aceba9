"""The C extensions are used only when built from the source beside them (a stale build would crash workers)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from streamlet.kafka.native_modules import NATIVE_SOURCES, load_native

EXTENSIONS = [("streamlet._record_batch", "record_batch.c"), ("streamlet._record_encoder", "record_encoder.c")]


@pytest.mark.parametrize(("name", "source"), EXTENSIONS)
def test_the_installed_build_is_from_its_source(name: str, source: str) -> None:
    module = load_native(name, source)
    assert module is not None, f"{name} is not built from {NATIVE_SOURCES / source}: rerun `pip install -e .`"
    assert module.__name__ == name


@pytest.mark.parametrize(("name", "source"), EXTENSIONS)
def test_a_build_from_another_source_is_refused_with_a_warning(
    name: str, source: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shutil.copy(NATIVE_SOURCES / source, tmp_path / source)
    with (tmp_path / source).open("a") as changed:  # the source moved on since the build
        changed.write("\n/* a later change */\n")
    with caplog.at_level(logging.WARNING, logger="streamlet.native"):
        assert load_native(name, source, sources=tmp_path) is None
    assert f"{name} was built from another version of" in caplog.text
    assert "pure-Python path" in caplog.text and "pip install -e ." in caplog.text


def test_a_build_without_its_source_beside_it_is_used(tmp_path: Path) -> None:
    module = load_native("streamlet._record_batch", "record_batch.c", sources=tmp_path)  # a wheel: no sources
    assert module is not None and hasattr(module, "decode_records")


def test_no_build_means_the_pure_python_path(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="streamlet.native"):
        assert load_native("streamlet._no_such_extension", "record_batch.c") is None
    assert caplog.text == ""  # an install without a C compiler is not a problem to report
