"""python -m bench.studies.class_budget: one cell per (table, method) on the seed-0 training part, resumed on a
rerun, and a report that states each table's gap and the tables short of the target."""

import json

import numpy as np
import pandas as pd

from bench.studies import class_budget


def _table(path, seed):
    rng = np.random.default_rng(seed)
    X = rng.random((80, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=np.where(X[:, 0] + X[:, 1] > 1, "yes", "no"))
    frame.to_csv(path, index=False)


def test_cells_resume_and_the_report_names_the_gap(tmp_path, monkeypatch, capsys):
    for name, seed in (("alpha", 0), ("beta", 1)):
        _table(tmp_path / f"{name}.csv", seed)
    # the same two methods, at budgets a test affords (fixed epochs, so the run does not depend on the machine)
    monkeypatch.setattr(class_budget, "METHODS", {"budget-10": dict(n_starts=1, n_epochs=2),
                                                  "paper": dict(n_starts=2, n_epochs=30)})
    out = tmp_path / "cells.jsonl"
    args = ["--data-dir", str(tmp_path), "--out", str(out)]
    class_budget.main(args)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["dataset"], r["method"]) for r in records) == [
        ("alpha", "budget-10"), ("alpha", "paper"), ("beta", "budget-10"), ("beta", "paper")]
    assert all(r["rows"] == 60 and 0 <= r["train_accuracy"] <= 100 for r in records)  # the 75% training part
    capsys.readouterr()
    class_budget.main(args)  # every cell is done: nothing is fitted again
    assert capsys.readouterr().out == "" and len(out.read_text().splitlines()) == 4
    class_budget.main(args + ["--report"])
    report = capsys.readouterr().out
    cell = {(r["dataset"], r["method"]): r["train_accuracy"] for r in records}
    gap = cell["alpha", "budget-10"] - cell["alpha", "paper"]
    assert f"| alpha | 60 | {cell['alpha', 'paper']:.2f} |" in report and f"| {gap:+.2f} |" in report
    assert "of 2 tables" in report
