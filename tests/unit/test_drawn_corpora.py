"""The oracles' generated corpora are committed under their current keys (tests/support/drawn_cases.py).

A strategy changed without its corpus drawn again and committed would make every CI run draw it (other cases than
the change was tested on, and a minute of CPU): this fails first, in the quick tier, naming the file."""

from __future__ import annotations

import gzip
import json

from tests.support import oracle_corpus, semantics_corpus
from tests.support.drawn_cases import CORPORA_DIR, corpus_path

EXPECTED = {
    corpus_path("assignment", oracle_corpus.CORPUS_SOURCES): oracle_corpus.GENERATED_SMALL
    + oracle_corpus.GENERATED_LARGE,
    **{
        corpus_path(semantics_corpus.corpus_name(name), semantics_corpus.STRATEGY_SOURCES): (
            semantics_corpus.GENERATED_CASES
        )
        for name in semantics_corpus.CORPORA
    },
}


def test_every_corpus_is_committed_under_its_current_key() -> None:
    missing = sorted(path.name for path in EXPECTED if not path.is_file())
    assert not missing, (
        f"not in {CORPORA_DIR}: {missing}; a strategy or Hypothesis changed: run the oracle tests "
        "(`scripts/test tests/oracle -n 2`), which draw them there, and commit them"
    )


def test_no_other_corpus_is_kept() -> None:
    assert sorted(p.name for p in CORPORA_DIR.glob("*.json.gz")) == sorted(p.name for p in EXPECTED)


def test_each_corpus_holds_its_number_of_distinct_cases() -> None:
    for path, count in EXPECTED.items():
        cases = json.loads(gzip.decompress(path.read_bytes()))
        assert len({json.dumps(case, sort_keys=True) for case in cases}) == len(cases) == count, path.name
