"""Where the tests' data lives: inside the repository, so every test runs the same everywhere."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ASSIGNMENT_CASES = FIXTURES / "assignment"
TEXT_DIR = FIXTURES / "text"
