"""bench.studies.time_budget's report: the budgeted fits' median against the paper budget's, with the stored
seed-0 cell standing in for a seed the paper budget was not fitted on here."""

from bench.studies.time_budget import report, stored_paper


def record(dataset: str, seed: int, r2: float, method: str = "budget") -> dict:
    return {"part": "a", "dataset": dataset, "seed": seed, "depth": 4, "method": method, "time_budget": 10.0,
            "train_r2": r2, "wall_seconds": 10.5, "n_starts": 128, "n_epochs": 3000, "load_before": 2.0,
            "load_after": 2.0}


def test_the_report_compares_medians_over_seeds_and_counts_the_target():
    paper = stored_paper(4)["abalone"]["train_r2"]
    text = report([record("abalone", 0, paper - 0.2), record("abalone", 1, paper + 1.0), record("abalone", 2, 10.0),
                   record("abalone", 1, paper + 0.6, "paper"), record("airfoil_self_noise", 0, 0.0)])
    # budgeted median: paper - 0.2; paper median of the stored seed 0 and the fitted seed 1: paper + 0.3
    row = next(line for line in text.splitlines() if line.startswith("| abalone |"))
    assert f"| {paper - 0.2:.2f} |" in row and "(seed 0 stored)" in row and row.endswith("| -0.50 |")
    assert "within 0.5 point(s) of the paper budget's on 1 of 2 datasets" in text


def test_the_report_compares_the_race_alone_with_the_polished_default_on_test_r2():
    def fitted(seed, method, train, test):
        return {**record("abalone", seed, train, method), "test_r2": test}

    text = report([fitted(0, "race", 60.0, 50.0), fitted(1, "race", 61.0, 52.0), fitted(0, "budget", 62.0, 53.0),
                   fitted(1, "budget", 63.0, 51.0), fitted(2, "budget", 90.0, 90.0),  # seed 2: no race to pair with
                   record("airfoil_self_noise", 0, 80.0, "race")])
    row = next(line for line in text.splitlines() if line.startswith("| a | abalone |"))
    assert row == "| a | abalone | 0, 1 | 60.50 | 62.50 | 51.00 | 52.00 | +1.00 |"
    assert "median +1.00 points, higher on 1 of 1" in text  # airfoil has no polished cell: not compared
