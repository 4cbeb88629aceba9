"""The cost of TLS and SASL: the same streamlet WordCount peer on one broker's PLAINTEXT and SASL_SSL listeners.

One local broker, secured as `streamlet broker start --security sasl_ssl` makes it (its CA, TLS certificates,
SCRAM users, ACLs enforced), plus a PLAINTEXT listener on a second port for the bench's own tooling and for the
plaintext peer. The two peers differ in nothing but the listener: `streamlet 1 proc x 2 threads` (bench/wordcount.py's
peer, same corpus and settings), once on PLAINTEXT and once on SASL_SSL with SCRAM-SHA-512, in interleaved rounds
(A B, then B A, ...). The closing table gives each round's words/s and the ratio SASL_SSL / PLAINTEXT, and its
median.

Usage: .venv/bin/python bench/tls_cost.py [--rounds R] [--words N] [--processes P] [--threads T]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import corpus as corpus_mod  # noqa: E402
import wordcount  # noqa: E402
from common import log  # noqa: E402

from streamlet.kafka.broker import _BROKER_PRINCIPAL, ADMIN_USER, CLIENT_USER, SASL_SSL_MODE, LocalBroker  # noqa: E402

HOST = "127.0.0.1"


def dual_listener_broker(directory: Path) -> tuple[LocalBroker, int]:
    """A SASL_SSL broker that also listens on PLAINTEXT (whose anonymous principal is a super user, as the
    bench's tooling must create and read topics); returns it and the PLAINTEXT port."""
    from streamlet.kafka.broker import _free_port

    port, plain, controller = _free_port(HOST), _free_port(HOST), _free_port(HOST)
    while len({port, plain, controller}) < 3:
        plain, controller = _free_port(HOST), _free_port(HOST)
    supers = ";".join(f"User:{user}" for user in (_BROKER_PRINCIPAL, ADMIN_USER, CLIENT_USER, "ANONYMOUS"))
    overrides = {
        "listeners": f"SASL_SSL://{HOST}:{port},PLAINTEXT://{HOST}:{plain},CONTROLLER://{HOST}:{controller}",
        "advertised.listeners": f"SASL_SSL://{HOST}:{port},PLAINTEXT://{HOST}:{plain}",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
        "super.users": supers,
    }
    broker = LocalBroker(
        directory, port=port, controller_port=controller, security=SASL_SSL_MODE, heap="1g", overrides=overrides
    )
    return broker, plain


def summary(rounds: list[dict[str, Any]]) -> str:
    rows, ratios = [], []
    for i, r in enumerate(rounds, 1):
        plain, tls = r["plaintext"].get("words_per_s"), r["sasl_ssl"].get("words_per_s")
        ratio = round(tls / plain, 3) if plain and tls else None
        if ratio is not None:
            ratios.append(ratio)
        rows.append([i, plain, tls, ratio])
    text = common.table(["round", "PLAINTEXT words/s", "SASL_SSL words/s", "SASL_SSL / PLAINTEXT"], rows)
    median = statistics.median(ratios) if ratios else None
    return text + f"\n\nmedian ratio SASL_SSL / PLAINTEXT: {median}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--words", type=int, default=corpus_mod.TARGET_WORDS)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    common.quiet_logs()
    c = corpus_mod.build(args.words)
    broker, plain_port = dual_listener_broker(common.WORK / "broker-tls")
    broker.wipe()
    log("starting a SASL_SSL broker with a PLAINTEXT listener beside it ...")
    status = broker.start()
    plain = f"{HOST}:{plain_port}"
    secured = status.client_settings()
    name = f"streamlet {args.processes} proc x {args.threads} threads"
    peers = {
        "plaintext": wordcount.Peer(
            f"{name}, PLAINTEXT", "framework", "", wordcount._streamlet(args.processes, args.threads)
        ),
        "sasl_ssl": wordcount.Peer(
            f"{name}, SASL_SSL",
            "framework",
            "",
            wordcount._streamlet(args.processes, args.threads, connect=(status.bootstrap_servers, secured)),
        ),
    }
    run_id = time.strftime("%m%d%H%M%S")
    rounds: list[dict[str, Any]] = []
    try:
        secs = asyncio.run(wordcount.prepare(plain, c))
        log(f"loaded {c.words} words in {secs:.1f}s")
        for round_no in range(args.rounds):
            order = ["plaintext", "sasl_ssl"] if round_no % 2 == 0 else ["sasl_ssl", "plaintext"]
            results: dict[str, Any] = {}
            for key in order:
                log(f"round {round_no + 1}/{args.rounds}: {peers[key].name} ...")
                results[key] = asyncio.run(
                    wordcount.run_peer(peers[key], plain, c, f"{run_id}r{round_no}", args.timeout)
                )
                log(f"{peers[key].name}: {results[key].get('status')} {results[key].get('words_per_s')}")
            rounds.append(results)
    finally:
        broker.stop()
    text = summary(rounds)
    print(f"\nWordCount, {c.words:,} words, {wordcount.PARTITIONS} partitions, one local broker:\n{text}")
    command = " ".join(["bench/tls_cost.py", *(argv or sys.argv[1:])])
    path = common.write_result("tls-cost", {"corpus": c.summary(), "rounds": rounds, "table": text, "command": command})
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
