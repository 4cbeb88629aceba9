"""Pure-Python parts of streamlet.spark: compare, offsets parsing, the CLI's wiring; no Spark, no broker."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from streamlet.errors import StreamletError
from streamlet.spark import SparkNotInstalledError
from streamlet.spark.cli import add_verify_parser, parse_offsets, verify_wordcount
from streamlet.spark.wordcount import Mismatch, compare, offsets_option


def test_compare_reports_wrong_missing_and_extra() -> None:
    truth = {"a": 3, "b": 1, "": 2, "c": 5}
    output = {"a": 3, "b": 2, "d": 1, "c": 5}
    assert compare(truth, output) == [
        Mismatch("", 2, None),
        Mismatch("b", 1, 2),
        Mismatch("d", None, 1),
    ]
    assert [m.kind for m in compare(truth, output)] == ["missing", "wrong count", "extra"]
    assert compare(truth, dict(truth)) == []
    assert str(Mismatch("b", 1, 2)) == "wrong count  'b': expected 1, output says 2"


def test_offsets_option_json() -> None:
    assert offsets_option("t", "earliest") == "earliest"
    assert offsets_option("t", {1: 5, 0: -2}) == '{"t": {"0": -2, "1": 5}}'


def test_parse_offsets() -> None:
    assert parse_offsets("earliest", 3, "starting") == "earliest"
    assert parse_offsets("latest", 3, "ending") == "latest"
    assert parse_offsets("1:10", 3, "starting") == {0: -2, 1: 10, 2: -2}
    assert parse_offsets("0:4, 2:7", 3, "ending") == {0: 4, 1: -1, 2: 7}
    assert parse_offsets('{"t":{"0":1}}', 1, "starting") == '{"t":{"0":1}}'
    for bad, bound in [
        ("latest", "starting"),
        ("earliest", "ending"),
        ("5:1", "starting"),
        ("x", "ending"),
        ("{nope", "starting"),
    ]:
        with pytest.raises(StreamletError):
            parse_offsets(bad, 3, bound)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="streamlet")
    add_verify_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_verify_parser_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMLET_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    args = _parse(["verify", "wordcount"])
    assert args.handler is verify_wordcount
    assert (args.bootstrap_servers, args.input_topic, args.output_topic) == (
        "127.0.0.1:1",
        "streams-plaintext-input",
        "streams-wordcount-output",
    )
    assert (args.starting_offsets, args.ending_offsets, args.max_mismatches) == ("earliest", "latest", None)
    args = _parse(
        [
            "verify",
            "wordcount",
            "--bootstrap-servers",
            "h:9",
            "--input-topic",
            "i",
            "--output-topic",
            "o",
            "--max-mismatches",
            "3",
            "--ending-offsets",
            "0:10",
        ]
    )
    assert (args.bootstrap_servers, args.input_topic, args.output_topic, args.max_mismatches) == ("h:9", "i", "o", 3)


def test_verify_parser_under_an_existing_verify_command() -> None:
    parser = argparse.ArgumentParser(prog="streamlet")
    verify = parser.add_subparsers(dest="command", required=True).add_parser("verify")
    add_verify_parser(verify.add_subparsers(dest="what", required=True))
    args = parser.parse_args(["verify", "wordcount", "--input-topic", "i"])
    assert (args.handler, args.input_topic) == (verify_wordcount, "i")


def test_streamlet_cli_has_verify_wordcount() -> None:
    from streamlet.cli import build_parser

    args = build_parser().parse_args(["verify", "wordcount", "--bootstrap-servers", "h:1", "--max-mismatches", "2"])
    assert (args.handler, args.bootstrap_servers, args.max_mismatches) == (verify_wordcount, "h:1", 2)


def test_missing_pyspark_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now raises ImportError
    from streamlet.spark.session import require_pyspark

    with pytest.raises(SparkNotInstalledError, match=r"streamlet\[spark\]"):
        require_pyspark()
    assert verify_wordcount(_parse(["verify", "wordcount", "--bootstrap-servers", "127.0.0.1:1"])) == 2
    assert "pip install 'streamlet[spark]'" in capsys.readouterr().err


def test_importing_does_not_import_pyspark() -> None:
    code = (
        "import sys, streamlet, streamlet.spark.cli, streamlet.spark.wordcount, streamlet.spark.session; "
        "assert 'pyspark' not in sys.modules, 'pyspark imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
