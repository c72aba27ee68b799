"""Hostile uploads (issue 18) and the largest legitimate ones: time to a result or a refusal, and peak memory.

Each file is read in a fresh process (``python -m bench.studies.hostile_uploads --read FILE``) whose peak RSS is taken from
``wait4``; that process runs under an address-space cap (``--cap-mb``) so that measuring an unbounded reader cannot
take the machine down: "cap" in the table means the reader hit it. Results go to stdout as a Markdown table.

    python -m bench.studies.hostile_uploads                   # every case, with the reader the pages call
    python -m bench.studies.hostile_uploads --reader read_table --cases xlsx_shared_string
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from tests import hostile_files as hostile

CASES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "xlsx_shared_string": ("shared.xlsx", lambda: hostile.huge_shared_string_xlsx(1_200_000_000)),
    "xlsx_inline_cell": ("inline.xlsx", lambda: hostile.huge_inline_cell_xlsx(1_200_000_000)),
    "parquet_plain_text": ("plain.parquet", lambda: hostile.plain_text_parquet(20_000, 3, 100_000)),
    "parquet_dictionary_text": ("dict.parquet", lambda: hostile.plain_text_parquet(20_000, 3, 100_000, True)),
    "csv_wide": ("wide.csv", lambda: hostile.wide_csv(1_000_000)),
    "xlsx_wide_header": ("wide.xlsx", lambda: hostile.wide_header_xlsx(3_000_000)),
    "legit_xlsx_100k_x_200": ("numbers.xlsx", lambda: hostile.numeric_xlsx(100_000, 200)),
    "legit_csv_100k_x_75": ("numbers.csv", lambda: hostile.numeric_csv(100_000, 75)),  # 200 columns: 108 MB
    "legit_parquet_100k_x_200": ("numbers.parquet", lambda: hostile.numeric_parquet(100_000, 200)),
}


def read_once(path: Path, reader: str) -> None:
    """The child: read ``path`` with ``reading.<reader>``, print the outcome as JSON."""
    from get_core.data import reading
    from get_core.data.columns import DataError

    content, start = path.read_bytes(), time.perf_counter()
    try:
        df = getattr(reading, reader)(content, path.name)
        outcome = f"read {df.shape[0]:,} x {df.shape[1]}"
    except DataError as exc:
        outcome = f"refused: {exc}"
    except MemoryError:
        outcome = "MemoryError"
    print(json.dumps({"seconds": time.perf_counter() - start, "outcome": outcome}))


def measure(path: Path, reader: str, cap_mb: int, timeout_s: float) -> dict:
    """Read ``path`` in a capped child; its wall time, outcome, and peak RSS (MB, sampled every 10 ms) of the child
    (what a server reading the upload would hold) and of the largest process it starts (a bounded reader's)."""
    import psutil

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))

    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "bench.studies.hostile_uploads", "--read", str(path), "--reader", reader],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=cap)
    process, peak, helper_peak = psutil.Process(child.pid), 0, 0
    while child.poll() is None and time.perf_counter() - start < timeout_s:
        try:
            peak = max(peak, process.memory_info().rss)
            helper_peak = max([helper_peak] + [c.memory_info().rss for c in process.children(recursive=True)])
        except psutil.Error:
            pass
        time.sleep(0.01)
    if child.poll() is None:
        child.kill()
    out, err = child.communicate()
    lines = out.decode().strip().splitlines()
    if lines:
        result = json.loads(lines[-1])
    elif child.returncode == -9:
        result = {"outcome": f"still reading after {timeout_s:.0f} s"}
    else:
        result = {"outcome": f"died: {(err.decode().strip().splitlines() or ['?'])[-1]}"}
    return {"seconds": result.get("seconds", time.perf_counter() - start), "peak_mb": peak / 2**20,
            "helper_mb": helper_peak / 2**20, "outcome": result["outcome"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reader", default="read_table_bounded", help="reading.<reader>(data, filename)")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--cap-mb", type=int, default=6144, help="address-space cap of the reading process")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a read is stopped")
    parser.add_argument("--read", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.read:
        return read_once(args.read, args.reader)
    print("| case | file | reader | time (s) | peak RSS (MB) | helper peak RSS (MB) | outcome |\n"
          "|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases:
            filename, build = CASES[case]
            path = Path(folder) / filename
            path.write_bytes(build())
            row = measure(path, args.reader, args.cap_mb, args.timeout)
            print(f"| {case} | {path.stat().st_size / 1e6:.2f} MB | `{args.reader}` | {row['seconds']:.2f} | "
                  f"{row['peak_mb']:,.0f} | {row['helper_mb']:,.0f} | {row['outcome'][:110]} |", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
