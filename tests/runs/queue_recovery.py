"""Measure how fast the queue recovers from a SIGKILLed worker with no page open (docs/BENCHMARKS.md, "Queue
recovery"): ``python -m tests.runs.queue_recovery --trials 5 --grace 3 30``.

Each trial is the scenario of ``test_a_sigkilled_workers_run_fails_and_the_next_starts_with_no_page_open``: one slot,
a long run training and a tiny one queued, the worker killed, only the supervisor acting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from get_core.runs import launch
from get_core.runs.store import DB_ENV, RunStore
from tests.runs.test_worker import kill_and_time_recovery, stop_everything


def trial(grace: float) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.sqlite"
        os.environ[DB_ENV] = str(path)
        store = RunStore(path, heartbeat_grace=grace)
        try:
            failed, started, _ = kill_and_time_recovery(store)
        finally:
            stop_everything(store)
        return failed, started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--grace", type=float, nargs="+", default=[3.0])
    args = parser.parse_args()
    os.environ[launch.MAX_RUNNING_ENV] = "1"
    for grace in args.grace:
        times = [trial(grace) for _ in range(args.trials)]
        for failed, started in times:
            print(f"grace {grace:g} s: FAILED after {failed:.2f} s, next RUNNING after {started:.2f} s", flush=True)
        print(f"grace {grace:g} s, median of {args.trials}: FAILED after "
              f"{statistics.median(t[0] for t in times):.2f} s, next RUNNING after "
              f"{statistics.median(t[1] for t in times):.2f} s (target {grace + 5:g} s)", flush=True)


if __name__ == "__main__":
    main()
