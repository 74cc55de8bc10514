"""Benchmark load -> turns -> chunks on a large synthetic Claude Code history.

``python -m eval.bench_load --out DIR [--messages 1000000] [--workers N]`` writes
``DIR/bench_load.json``: the load timed serially (``workers=1``) and as ``convlab.load`` does by
default (file chunks in parallel processes) in the same run, and peak memory counting the
workers (the resident memory of this process and its workers, sampled during the load).
Targets: loading >= 100,000 messages/s; sentence splitting + token counting >= 20,000
sentences/s; peak memory < 4 GB for a million messages.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import resource
import tempfile
import threading
import time
import timeit
from pathlib import Path

import psutil

import convlab
from convlab.atomic import write_text_atomic

WORDS = [
    "cache",
    "index",
    "query",
    "turn",
    "embed",
    "vector",
    "budget",
    "token",
    "search",
    "fixture",
    "migration",
    "header",
    "socket",
    "worker",
    "leak",
    "retry",
    "backoff",
    "schema",
    "parquet",
    "frame",
    "model",
    "latency",
    "recall",
    "shard",
    "replica",
    "lock",
    "commit",
    "branch",
    "rebase",
    "deploy",
    "probe",
    "timeout",
    "encoding",
    "pipeline",
    "metric",
    "plot",
    "kernel",
    "notebook",
]


def sentence(rng: random.Random) -> str:
    n = rng.randint(6, 16)
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(root: Path, messages: int, per_session: int = 200, seed: int = 0) -> int:
    """Write sessions of (prompt, assistant text, tool_use, tool_result, assistant text) lines."""
    rng = random.Random(seed)
    written = 0
    s = 0
    while written < messages:
        sid = f"bench-{s:06d}"
        lines = []
        parent = None
        for t in range(per_session // 4):
            ts = f"2026-01-{1 + t % 28:02d}T10:{t % 60:02d}:00.000Z"
            base = {
                "sessionId": sid,
                "isSidechain": False,
                "timestamp": ts,
                "cwd": "/w",
                "version": "2.1.40",
                "userType": "external",
            }
            u = f"{sid}-u{t}"
            lines.append(
                {
                    **base,
                    "type": "user",
                    "uuid": u,
                    "parentUuid": parent,
                    "message": {
                        "role": "user",
                        "content": " ".join(sentence(rng) for _ in range(rng.randint(1, 3))),
                    },
                }
            )
            mid = f"msg_{sid}_{t}"
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": u + "a",
                    "parentUuid": u,
                    "message": {
                        "id": mid,
                        "role": "assistant",
                        "content": [
                            {
                                "type": "text",
                                "text": " ".join(sentence(rng) for _ in range(rng.randint(1, 4))),
                            }
                        ],
                    },
                }
            )
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": u + "b",
                    "parentUuid": u + "a",
                    "message": {
                        "id": mid,
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": f"t{t}",
                                "name": "Bash",
                                "input": {"command": f"grep -n {rng.choice(WORDS)} src"},
                            }
                        ],
                    },
                }
            )
            lines.append(
                {
                    **base,
                    "type": "user",
                    "uuid": u + "r",
                    "parentUuid": u + "b",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"t{t}",
                                "content": sentence(rng),
                            }
                        ],
                    },
                }
            )
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": u + "c",
                    "parentUuid": u + "r",
                    "message": {
                        "id": mid + "c",
                        "role": "assistant",
                        "content": [{"type": "text", "text": sentence(rng)}],
                    },
                }
            )
            parent = u + "c"
            written += 4  # user, merged assistant, tool, assistant
        path = root / f"{sid}.jsonl"
        path.write_text("\n".join(json.dumps(x, separators=(",", ":")) for x in lines) + "\n")
        s += 1
    return written


class TreeMemory:
    """Peak resident memory of this process and its children, sampled every 50 ms.

    Loader workers are separate processes; ``ru_maxrss`` sees one process at a time, so the
    peak of the whole tree is sampled while the load runs.
    """

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
            self.peak_mb = max(self.peak_mb, total / 2**20)
            self._stop.wait(0.05)  # costs ~3% of a core (9% at 20 ms)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.bench_load", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("runs/bench"))
    p.add_argument("--messages", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=None, help="loader processes (default: auto)")
    args = p.parse_args(argv)
    # how fast this machine runs plain Python, to compare runs across machines
    calibration_ms = 1000 * min(timeit.repeat("sum(range(1_000_000))", number=1, repeat=5))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        expected = generate(root, args.messages)
        os.sync()  # the generated files on disk before the reader is timed, not its writeback
        gen_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        serial = convlab.load(root, format="claude_code", workers=1)
        serial_s = time.perf_counter() - t0
        n_serial = serial.messages.height
        del serial
        with TreeMemory() as tree:
            t0 = time.perf_counter()
            corpus = convlab.load(root, format="claude_code", workers=args.workers)
            load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        turns = convlab.turns(corpus)
        turns_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sents = convlab.chunks(corpus, convlab.ContentPolicy())
        sent_s = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = args.workers or os.cpu_count() or 1  # the auto rule for inputs over 64 MiB
    # the peak of the whole run: this process's own peak (the sentences step, say) or the
    # sampled peak of this process and its loader workers together
    run_peak_mb = max(peak_mb, tree.peak_mb)
    n_msg = corpus.messages.height
    result = {
        "messages": n_msg,
        "messages_expected": expected,
        "turns": turns.height,
        "sentences": sents.height,
        "seconds": {
            "generate": gen_s,
            "load_serial": serial_s,
            "load": load_s,
            "turns": turns_s,
            "sentences": sent_s,
        },
        "messages_per_s_serial": n_serial / serial_s,
        "messages_per_s": n_msg / load_s,
        "loader_workers": workers,
        "sentences_per_s": sents.height / sent_s,
        "turn_messages_per_s": n_msg / turns_s,
        "peak_rss_mb": peak_mb,
        "peak_rss_during_parallel_load_mb": tree.peak_mb,
        "peak_rss_run_mb": run_peak_mb,
        "targets": {
            "load_messages_per_s>=100000": n_msg / load_s >= 100_000,
            "sentences_per_s>=20000": sents.height / sent_s >= 20_000,
            "peak_rss_mb<4096": run_peak_mb < 4096,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "sum_range_1e6_ms": calibration_ms,
        },
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out / "bench_load.json", json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
