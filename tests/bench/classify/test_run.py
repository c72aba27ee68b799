"""bench.classify's GET methods with logistic leaves (issue 52): a tiny table end to end through the cell store."""

import json

import numpy as np
import pandas as pd

from bench.classify.run import advice, main


def test_get_logistic_and_get_auto_write_their_cells_with_the_chosen_leaf(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=np.where(X[:, 0] + X[:, 1] > 0, "yes", "no"))
    frame.to_csv(data / "line.csv", index=False)
    cells = tmp_path / "cells.jsonl"
    main(["--data-dir", str(data), "--methods", "logistic", "get-logistic", "get-auto", "get-auto-cal", "--budget",
          "1", "--cells", str(cells), "--no-doc"])
    records = {r["method"]: r for r in map(json.loads, cells.read_text().splitlines())}
    assert records["get-logistic"]["leaf"] == "logistic" and records["get-auto"]["leaf"] in ("constant", "logistic")
    assert records["get-auto"]["temperature"] == 1.0  # get-auto stays v7's, untempered
    calibrated = records["get-auto-cal"]  # the same fit's log loss with and without its temperature
    assert calibrated["temperature"] > 0 and np.isfinite(calibrated["log_loss_untempered"])
    assert calibrated["temperature"] != 1.0 or np.isclose(calibrated["log_loss_untempered"], calibrated["log_loss"])
    assert records["get-logistic"]["accuracy"] > 85
    assert "| line |" in capsys.readouterr().out


def test_advice_says_per_table_where_the_forest_leads_and_where_get_falls_under_its_floor():
    accuracy = pd.DataFrame({"cart": [90.0, 80.0], "rf": [95.0, 85.2], "logistic": [91.0, 84.0],
                             "get-auto": [86.0, 85.0]}, index=["noisy", "plain"])
    lines = advice(accuracy)
    noisy = next(line for line in lines if line.startswith("| noisy | 86.00 | 95.00 | 91.00 | "))
    assert "The forest is 9.0 points ahead on this table" in noisy
    assert "Logistic regression is 5.0 points ahead" in noisy
    assert "| plain | 85.00 | 85.20 | 84.00 | The single tree is level with the forest on this table (85.0 against " \
           "85.2): it is the right tool here" in "\n".join(lines)
    assert advice(accuracy.drop(columns="rf")) == []
