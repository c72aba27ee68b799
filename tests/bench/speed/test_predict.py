"""python -m bench.speed.predict: a tiny run writes a figure for every model, its random trees spread rows over their
leaves, and bad options are refused in one line. No speed is asserted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench.speed import predict


def test_a_tiny_run_times_every_model_and_writes_the_json(tmp_path, capsys):
    out = tmp_path / "speed.json"
    predict.main(["--rows", "400", "--fit-rows", "200", "--repeats", "1", "--features", "3", "--depths", "8",
                  "--out", str(out)])
    records = json.loads(out.read_text())["records"]
    names = {r["model"] for r in records}
    assert {"GET (compiled routing)", "GET, ONNX in onnxruntime", "GET, numpy routing (before)", "CART, depth 8",
            "random forest, 100 trees of depth 12", "random forest, 500 trees of depth 12",
            "HistGradientBoosting (100 iterations)", predict.READ_FLOOR} == names
    assert all(r["cpu_s"] >= 0 and r["rows"] == 400 for r in records)
    assert "| 3 | 8 | GET (compiled routing) |" in capsys.readouterr().out


def test_the_random_trees_cut_every_node_at_the_median_of_its_rows():
    X = np.random.default_rng(0).normal(size=(4096, 5))
    tree = predict.random_tree(X, depth=6, seed=1)
    counts = np.bincount(tree.apply(X) - tree.n_leaves, minlength=tree.n_leaves)
    assert counts.min() >= 32 and counts.max() <= 96  # 64 per leaf for exact medians; ties and odd counts aside


@pytest.mark.parametrize("argv, message", [(["--depths", "13"], "argument --depths: expected an integer from 1 to 12"),
                                           (["--repeats", "0"], "argument --repeats: expected an integer >= 1")])
def test_out_of_range_options_are_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        predict.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
