"""bench.studies.time_budget's report: the budgeted fit of seed 0 against the stored paper-budget cell."""

from bench.studies.time_budget import report, stored_paper


def record(dataset: str, seed: int, r2: float) -> dict:
    return {"part": "a", "dataset": dataset, "seed": seed, "depth": 4, "method": "budget", "time_budget": 10.0,
            "train_r2": r2, "wall_seconds": 10.5, "n_starts": 128, "n_epochs": 3000, "load_before": 2.0,
            "load_after": 2.0}


def test_the_report_compares_seed_0_with_the_stored_paper_budget_and_counts_the_target():
    paper = stored_paper(4)["abalone"]["train_r2"]
    text = report([record("abalone", 0, paper - 0.2), record("abalone", 1, 10.0), record("airfoil_self_noise", 0,
                                                                                          0.0)])
    assert f"| abalone | {paper - 0.2:.2f} |" in text and "| -0.20 |" in text
    assert "within 0.5 point(s) of the paper budget on 1 of 2 datasets" in text
