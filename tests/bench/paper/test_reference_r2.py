"""The authors'-code comparison table joins the reference fits with our --tables cells by dataset, seed and depth."""

from bench.paper.reference_r2 import report


def test_report_puts_the_authors_fit_beside_ours():
    reference = [{"dataset": "d", "seed": 0, "depth": 2, "polish": False, "starts": 10, "epochs": 3000,
                  "train_r2": 50.0},
                 {"dataset": "d", "seed": 0, "depth": 2, "polish": True, "starts": 10, "epochs": 3000,
                  "train_r2": 52.5}]
    ours = [{"dataset": "d", "seed": 0, "method": m, "depth": 2, "train_r2": r2}
            for m, r2 in (("cart", 40.0), ("get", 51.0), ("get-polish", 53.0), ("get-alpha1", 45.0))]
    ours.append({"dataset": "d", "seed": 0, "method": "get", "depth": 4, "train_r2": 60.0})  # no reference: no row
    lines = report(reference, ours).splitlines()
    assert lines[2] == "| d | 0 | 2 | 40.00 | 50.00 | 51.00 | 52.50 | 53.00 |"
    assert not any("| 4 |" in line for line in lines)
    assert lines[-1].endswith("10 x 3000")


def test_report_marks_missing_fits():
    reference = [{"dataset": "d", "seed": 1, "depth": 4, "polish": False, "starts": 2, "epochs": 100,
                  "train_r2": 70.0}]
    assert "| d | 1 | 4 | – | 70.00 | – | – | – |" in report(reference, [])
