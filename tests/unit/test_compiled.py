"""Which build of the mypyc-compiled modules is imported (streamlet/_compiled.py)."""

import ast
import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamlet import _compiled

MODULES = ("streamlet.a", "streamlet.sub.b")
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _package(tmp_path: Path, *, group: bool = True, manifest: bool = True, built: bool = True) -> Path:
    (tmp_path / "sub").mkdir()
    for module in MODULES:
        source = _compiled.source_path(module, tmp_path)
        source.write_text(f"NAME = {module!r}\n")
        if built:
            source.with_name(source.stem + SUFFIX).write_bytes(b"")
    if group:
        (tmp_path / f"_mypyc__mypyc{SUFFIX}").write_bytes(b"")
    if manifest:
        hashes = {m: _compiled.source_sha256(_compiled.source_path(m, tmp_path)) for m in MODULES}
        (tmp_path / _compiled.MANIFEST).write_text(json.dumps(hashes))
    return tmp_path


def test_a_current_build_is_used(tmp_path: Path) -> None:
    assert _compiled.from_source({}, _package(tmp_path), MODULES) == ({}, [])


def test_nothing_built_needs_nothing(tmp_path: Path) -> None:
    assert _compiled.from_source({}, _package(tmp_path, built=False, group=False), MODULES) == ({}, [])


def test_pure_python_is_asked_for(tmp_path: Path) -> None:
    package = _package(tmp_path)
    sources, reasons = _compiled.from_source({_compiled.PURE_PYTHON_ENV: "1"}, package, MODULES)
    assert sources == {m: _compiled.source_path(m, package) for m in MODULES} and reasons == []
    assert _compiled.from_source({_compiled.PURE_PYTHON_ENV: "0"}, package, MODULES) == ({}, [])


def test_one_edited_source_loads_the_whole_group_from_source(tmp_path: Path) -> None:
    package = _package(tmp_path)
    _compiled.source_path("streamlet.sub.b", package).write_text("NAME = 'edited'\n")
    sources, reasons = _compiled.from_source({}, package, MODULES)
    assert set(sources) == set(MODULES)
    assert reasons == ["streamlet.sub.b: built from another version of b.py"]


@pytest.mark.parametrize(
    ("broken", "reason"),
    [({"group": False}, "its shared library"), ({"manifest": False}, "built without a recorded source hash")],
)
def test_an_incomplete_build_is_not_used(tmp_path: Path, broken: dict[str, bool], reason: str) -> None:
    sources, reasons = _compiled.from_source({}, _package(tmp_path, **broken), MODULES)
    assert set(sources) == set(MODULES) and len(reasons) == 2 and all(reason in r for r in reasons)


def _loaded_files(env: dict[str, str]) -> list[str]:
    code = "import sys, streamlet\nfor m in streamlet._compiled.COMPILED_MODULES: print(sys.modules[m].__file__)"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return run.stdout.split()


def test_the_environment_variable_gives_the_sources_in_a_real_import() -> None:
    env = {k: v for k, v in os.environ.items() if k != _compiled.PURE_PYTHON_ENV}
    assert all(f.endswith(".py") for f in _loaded_files({**env, _compiled.PURE_PYTHON_ENV: "1"}))
    if all(_compiled.built(m) for m in _compiled.COMPILED_MODULES):  # an install with mypyc (scripts/_venv.sh)
        assert not any(f.endswith(".py") for f in _loaded_files(env))


def test_compiled_modules_set_causes_themselves() -> None:
    """mypyc ignores `raise ... from ...` (the error would lose its `__cause__`, and `from None` would not hide
    the context): the compiled modules assign `__cause__` before raising."""
    raising_from = [
        f"{module}:{node.lineno}"
        for module in _compiled.COMPILED_MODULES
        for node in ast.walk(ast.parse(_compiled.source_path(module).read_text()))
        if isinstance(node, ast.Raise) and node.cause is not None
    ]
    assert raising_from == []
