"""Helpers shared by the topology tests."""

from __future__ import annotations


def lines(text: str) -> list[str]:
    """Lines with trailing whitespace stripped (the only normalisation the describe tests allow)."""
    return [line.rstrip() for line in text.split("\n")]
