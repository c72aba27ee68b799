"""python -m bench.studies.counterfactual: a small run times every cell, checks each answer against solving every
leaf, and writes its section of docs/BENCHMARKS.md without touching the rest."""

import re

from bench.studies import counterfactual


def test_a_small_run_writes_its_table_and_targets(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\nkept\n")
    monkeypatch.setattr(counterfactual, "DEFAULT_DOC", doc)
    counterfactual.main(["--depths", "2", "3", "--features", "3", "--queries", "2", "--cap", "1", "--note",
                         "A test.", "--doc"])
    text = doc.read_text()
    assert "kept" in text and "<!-- counterfactual:start -->" in text and "A test." in text
    rows = re.findall(r"^\| (\d+) \| 3 \| (none|1) \| [0-9.]+ \| [0-9.]+ \| \d+ \| \d+ \| [0-9.]+ \| [0-9.]+x \|$",
                      text, re.M)
    assert rows == [("2", "none"), ("2", "1"), ("3", "none"), ("3", "1")]
    assert "depth  2,   3 features, cap None: median" in capsys.readouterr().out


def test_the_tree_routes_its_rows_into_every_leaf():
    tree, X = counterfactual.routed_tree(depth=5, p=4, seed=1)
    assert set(tree.apply(X)) == set(range(tree.n_leaves, 2 * tree.n_leaves))
