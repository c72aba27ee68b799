"""python -m bench.studies.app_categories: both variants of a cell on the worker's own path, paired."""

from __future__ import annotations

from bench.studies import app_categories
from tests.bench.shared import needs_datasets


@needs_datasets("classification/german_credit")
def test_a_cell_fits_both_variants_and_the_categories_read_as_fewer_terms(capsys):
    app_categories.main(["--tables", "german_credit", "--seeds", "0", "--budget", "0.5", "--max-rows", "160"])
    lines = capsys.readouterr().out.splitlines()
    figures = {line.split()[2]: dict(part.split("=") for part in line.split()) for line in lines[:2]}
    assert set(figures) == {"variant=categories", "variant=one-hot"}
    categories, one_hot = figures["variant=categories"], figures["variant=one-hot"]
    assert categories["inputs"] == one_hot["inputs"]  # the same levels, one weight each
    assert float(categories["terms_per_split"]) <= float(one_hot["terms_per_split"])
    assert lines[-1].startswith("categories - one-hot: ")
