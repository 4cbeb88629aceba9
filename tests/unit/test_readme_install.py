"""README's Install section: the command a new user copies works, and it explains every extra pyproject defines."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _install_section() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"^## Install\n(.*?)^## ", readme, re.S | re.M)
    assert match, "README.md has no '## Install' section"
    return match.group(1)


def _extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    return extras


def test_install_command_names_the_dev_and_spark_extras() -> None:
    section = _install_section()
    assert "pip install -e '.[dev,spark]'" in section
    assert {"dev", "spark"} <= set(_extras())


def test_every_extra_is_explained_with_what_needs_it() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| (.+) \|$", _install_section(), re.M))
    assert set(rows) == set(_extras()), "one table row per pyproject extra"
    assert "experiment report" in rows["spark"], "the experiment report is what needs the spark extra"


def test_install_section_says_how_clients_find_the_broker() -> None:
    section = _install_section()
    assert 'eval "$(streamlet broker start)"' in section
    assert "9092" in section
