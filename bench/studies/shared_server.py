"""Many users on one shared server (issue 51): does every run complete, does each user's first run start before any
user's second, and does the server answer its health check within a second throughout?

A real app server (``streamlit run app.py`` on a free localhost port, in classroom mode) and ``--users`` simulated
users, each a workspace's scoped store submitting ``--runs-per-user`` small runs through ``launch.submit_run`` (the
Train page's call, without a browser), all at once; at most ``GET_EXPLORER_MAX_RUNNING`` (default 2) runs train at a
time. A thread asks the server's ``/_stcore/health`` every ``--poll`` seconds. Prints one JSON line of figures.

    python -m bench.studies.shared_server --users 30 --runs-per-user 1
    python -m bench.studies.shared_server --users 10 --runs-per-user 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from get_core.data import columns, reading
from get_core.data.encoding import DataSpec
from get_core.runs import launch
from get_core.runs.access import PASSWORD_ENV, Scope
from get_core.runs.store import RunStatus, RunStore
from tests.e2e.streamlit_app import serve_app

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "airfoil_self_noise.csv"
#: A small run: a depth-2 tree, 2 starts of 20 epochs, on 300 rows (its baselines are fitted too, as in the app).
SMALL = {"depth": 2, "leaf": "constant", "n_starts": 2, "n_epochs": 20, "alpha_range": [5.0, 150.0], "n_alphas": 2,
         "learning_rate": 0.01, "l1": 0.0, "polish": False, "device": "cpu"}


def _poll_health(url: str, every: float, stop: threading.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as response:
                ok = response.status == 200
        except OSError:
            ok = False
        latencies.append(time.perf_counter() - start if ok else float("inf"))
        stop.wait(every)


def measure(users: int, runs_per_user: int, poll: float, timeout_s: float) -> dict:
    table = reading.read_table(EXAMPLE.read_bytes(), EXAMPLE.name).head(300)
    spec = DataSpec(target="target", features=tuple(c for c in table.columns if c != "target"))
    params = {"config": SMALL, "data": spec.to_dict(), "test_fraction": 0.25, "seed": 3}
    data = columns.to_parquet_bytes(table)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "runs.sqlite"
        (Path(folder) / "calibration.measuring").write_text("held by the benchmark")
        os.environ.setdefault(launch.MAX_RUNNING_ENV, "2")
        store = RunStore(db)
        with serve_app(db, {PASSWORD_ENV: "benchmark password"}) as url:
            latencies: list[float] = []
            stop = threading.Event()
            poller = threading.Thread(target=_poll_health, args=(url, poll, stop, latencies), daemon=True)
            poller.start()
            start = time.time()
            turn = {}
            for k in range(runs_per_user):  # every user queues at once, one run after another
                for user in range(users):
                    own = store.scoped(Scope(owner=f"workspace:user{user}"))
                    turn[launch.submit_run(own, params, data, EXAMPLE.name, n_rows=len(table),
                                           n_features=len(spec.features))] = k
            while store.has_active_runs() and time.time() - start < timeout_s:
                launch.dispatch(store)
                time.sleep(1.0)
            stop.set()
            poller.join()
        runs = store.list_runs()
        store.close()
    started = sorted((r for r in runs if r.started_at is not None), key=lambda r: (r.started_at, r.run_id))
    turns = [turn[r.run_id] for r in started]
    finite = sorted(x for x in latencies if x != float("inf"))
    return {"users": users, "runs_per_user": runs_per_user, "max_running": launch.max_running(),
            "finished": sum(r.status is RunStatus.FINISHED for r in runs), "runs": len(runs),
            "not_finished": {r.run_id: f"{r.status.value}: {r.error}" for r in runs
                             if r.status is not RunStatus.FINISHED},
            "wall_s": round(max((r.finished_at or 0) for r in runs) - start, 1),
            "turn_order_kept": turns == sorted(turns),
            "health_checks": len(latencies), "health_failed": sum(x == float("inf") for x in latencies),
            "health_over_1s": sum(x > 1.0 for x in latencies),
            "health_max_s": round(max(latencies), 3) if latencies else None,
            "health_p99_s": round(finite[int(0.99 * (len(finite) - 1))], 3) if finite else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=30)
    parser.add_argument("--runs-per-user", type=int, default=1)
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between health checks")
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up after this many seconds")
    args = parser.parse_args()
    print(json.dumps(measure(args.users, args.runs_per_user, args.poll, args.timeout)))


if __name__ == "__main__":
    main()
