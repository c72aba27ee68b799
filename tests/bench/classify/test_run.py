"""bench.classify's GET methods with logistic leaves (issue 52): a tiny table end to end through the cell store."""

import json

import numpy as np
import pandas as pd

from bench.classify.run import main


def test_get_logistic_and_get_auto_write_their_cells_with_the_chosen_leaf(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(160, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=np.where(X[:, 0] + X[:, 1] > 0, "yes", "no"))
    frame.to_csv(data / "line.csv", index=False)
    cells = tmp_path / "cells.jsonl"
    main(["--data-dir", str(data), "--methods", "logistic", "get-logistic", "get-auto", "--budget", "1",
          "--cells", str(cells), "--no-doc"])
    records = {r["method"]: r for r in map(json.loads, cells.read_text().splitlines())}
    assert records["get-logistic"]["leaf"] == "logistic" and records["get-auto"]["leaf"] in ("constant", "logistic")
    assert records["get-logistic"]["accuracy"] > 85
    assert "| line |" in capsys.readouterr().out
