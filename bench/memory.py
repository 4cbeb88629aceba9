"""Memory: does a worker's RSS stay flat as the number of distinct keys grows?

WordCount over input whose words are all distinct (`k0000000`, `k0000001`, ...; ten per line), so the count store
grows by one key per word. One `streamlet worker` (2 threads, commit 1 s, 10 MiB record cache) counts N/4 and
then N distinct keys (fresh topics and state each time), once with the per-store RocksDB defaults (Kafka
Streams': a 50 MiB block cache and up to 3 x 16 MiB memtables per store) and once with
`rocksdb_bounded_memory_bytes` (one cache for every store of the process, memtables included). The worker's
RSS is sampled every 0.2 s until every key is counted; reported: peak RSS and RSS at the end. Flat means the
N-key run peaks about where the N/4 run does: the record cache and RocksDB's memory are bounded, the key count
is not in memory.

Usage: .venv/bin/python bench/memory.py [--keys N] [--bounded-mib M] [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
from common import LIB_PY, log, spawn  # noqa: E402

PARTITIONS = 6
WORDS_PER_LINE = 10


async def run(bootstrap: str, keys: int, bounded_mib: int, timeout: float, run_id: str) -> dict[str, Any]:
    label = f"{keys:,} keys, " + (f"bounded {bounded_mib} MiB" if bounded_mib else "per-store defaults")
    slug = f"bench-mem-{run_id}-{keys}-{bounded_mib}"
    source, output = f"{slug}-in", f"{slug}-out"
    await common.recreate_topics(bootstrap, {source: PARTITIONS, output: PARTITIONS})
    words = [f"k{i:07d}" for i in range(keys)]
    lines = [" ".join(words[i : i + WORDS_PER_LINE]) for i in range(0, keys, WORDS_PER_LINE)]
    await common.produce_lines(bootstrap, source, lines, PARTITIONS)
    watcher = common.OutputWatcher(bootstrap, output, dict.fromkeys(words, 1))
    await watcher.start()
    work = common.WORK / run_id / f"memory-{keys}-{bounded_mib}"
    work.mkdir(parents=True, exist_ok=True)
    extra = ["--config", f"rocksdb_bounded_memory_bytes={bounded_mib * 1024 * 1024}"] if bounded_mib else []
    proc = spawn(
        "streamlet",
        [
            str(LIB_PY), "-m", "streamlet.cli", "worker", "examples.wordcount.app:app", "--threads", "2",
            "--state-dir", str(work / "state"), "--bootstrap-servers", bootstrap, "--log-level", "warning",
            "--config", "commit_interval_ms=1000", *extra,
        ],
        work / "worker.log",
        env={"WORDCOUNT_INPUT_TOPIC": source, "WORDCOUNT_OUTPUT_TOPIC": output, "WORDCOUNT_APPLICATION_ID": slug},
    )  # fmt: skip
    samples: list[float] = []
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            samples.append(common.group_memory_mib(proc.popen.pid, "VmRSS") or 0.0)
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    try:
        result = await watcher.wait(timeout, alive=proc.alive)
    finally:
        stop.set()
        await sampler
        common.stop(proc, grace=30)
        await watcher.close()
        shutil.rmtree(work / "state", ignore_errors=True)
        await common.delete_topics_with_prefix(bootstrap, slug)
    res: dict[str, Any] = {"run": label, "keys": keys, "bounded_mib": bounded_mib}
    live = [s for s in samples if s > 0]
    res.update(
        status="ok" if result.ok else "failed",
        reason=None if result.ok else result.reason,
        peak_rss_mib=round(max(live), 1) if live else None,
        end_rss_mib=round(live[-1], 1) if live else None,
        seconds=round(time.monotonic() - proc.started, 1),
    )
    log(f"{label}: {res}")
    return res


def render(results: list[dict[str, Any]]) -> str:
    rows = [
        [r["run"], r.get("peak_rss_mib", "-"), r.get("end_rss_mib", "-"), r.get("seconds", "-"), r["status"]]
        for r in results
    ]
    text = common.table(["run", "peak RSS MiB", "RSS at the end MiB", "s", "status"], rows)
    by = {(r["keys"], r["bounded_mib"]): r.get("peak_rss_mib") for r in results}
    growth = []
    for bounded in sorted({r["bounded_mib"] for r in results}):
        small, large = sorted({k for k, b in by if b == bounded})[:1], sorted({k for k, b in by if b == bounded})[-1:]
        if small and large and by[(small[0], bounded)] and by[(large[0], bounded)]:
            what = f"bounded {bounded} MiB" if bounded else "per-store defaults"
            ratio = by[(large[0], bounded)] / by[(small[0], bounded)]  # type: ignore[operator]
            growth.append(f"{what}: peak RSS x{ratio:.2f} from {small[0]:,} to {large[0]:,} keys")
    return text + ("\n\n" + "; ".join(growth) if growth else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--bounded-mib", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    common.quiet_logs()
    run_id = time.strftime("%m%d%H%M%S")
    results = []
    with common.broker() as bootstrap:
        for bounded in (0, args.bounded_mib):
            for keys in (args.keys // 4, args.keys):
                results.append(asyncio.run(run(bootstrap, keys, bounded, args.timeout, run_id)))
    text = render(results)
    print(f"\nWorker RSS against distinct keys:\n{text}")
    command = " ".join(["bench/memory.py", *(argv or sys.argv[1:])])
    path = common.write_result("memory", {"results": results, "table": text, "command": command})
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
