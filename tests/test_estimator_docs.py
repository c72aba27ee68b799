"""The estimators' numpydoc sections: one entry per parameter, in the signature's order, each GETConfig setting with
the meaning GETConfig gives it (its one home); one entry per attribute ``fit`` sets."""

from __future__ import annotations

import inspect
import re
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from sklearn.base import is_classifier

from get_core import GETClassifier, GETClassifierCV, GETRegressor, GETRegressorCV
from get_core.config import GETConfig

MEANINGS = {f.name: f.metadata["meaning"] for f in fields(GETConfig)}


def section(doc: str, title: str) -> dict[str, str]:
    """``title``'s entries of a numpydoc docstring: name -> its type line and text, whitespace collapsed."""
    body = re.split(rf"\n\s*{title}\n\s*-+\n", doc)[1]
    body = re.split(r"\n\s*\n\s*\w+\n\s*-+\n", body)[0]
    entries, name = {}, None
    for line in inspect.cleandoc("\n" + body).splitlines():
        if line and not line.startswith(" "):
            name, _, kind = line.partition(" : ")
            entries[name] = kind
        elif name is not None:
            entries[name] += " " + line.strip()
    return {name: " ".join(text.split()) for name, text in entries.items()}


@pytest.mark.parametrize("estimator", [GETRegressor, GETRegressorCV, GETClassifier, GETClassifierCV])
def test_every_parameter_has_an_entry_in_order_with_its_default_and_getconfigs_meaning(estimator):
    entries = section(estimator.__doc__, "Parameters")
    signature = inspect.signature(estimator.__init__).parameters
    assert list(entries) == [name for name in signature if name != "self"]
    for name, text in entries.items():
        default = signature[name].default
        assert f"default={default!r}" in text or f"default={default:.4g}" in text, name
        if name == "leaf" and is_classifier(estimator()):  # a classifier's leaf is GETConfig's class_leaf
            assert " ".join(MEANINGS["class_leaf"].removeprefix("Classification only: ").split()) in text
        elif name in MEANINGS:
            assert " ".join(MEANINGS[name].split()) in text, name  # the setting's meaning, as GETConfig has it


@pytest.mark.parametrize("estimator, settings", [
    (GETRegressor, dict(depth=2)), (GETRegressorCV, dict(depths=[1, 2], max_split_features="auto")),
    (GETClassifier, dict(depth=2)), (GETClassifierCV, dict(depths=[1, 2], max_split_features="auto"))])
def test_every_attribute_fit_sets_has_an_entry(estimator, settings):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.random((60, 3)), columns=["a", "b", "c"])
    model = estimator(n_starts=1, n_epochs=5, random_state=0, device="cpu", **settings).fit(
        X, X["a"] > X["b"] if is_classifier(estimator()) else X["a"] - X["b"])
    learned = {name for name in dir(model) if name.endswith("_") and not name.startswith("_")}  # n_classes_ is a property
    assert learned == set(section(estimator.__doc__, "Attributes"))
