"""skl2onnx converts the GET estimators, alone and at the end of a pipeline, to graphs that onnxruntime runs to
``predict``'s and ``predict_proba``'s numbers."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from get_core import GETClassifier, GETRegressor

skl2onnx = pytest.importorskip("skl2onnx")
ort = pytest.importorskip("onnxruntime")
from get_core import skl2onnx_converter  # noqa: E402  (only with skl2onnx installed)

skl2onnx_converter.register()


def run(model, X: np.ndarray) -> list:
    graph = skl2onnx.to_onnx(model, X[:1], target_opset=17)
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: X})


def table(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 4))
    return X, X[:, 0] - 2 * X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=400)


@pytest.mark.parametrize("leaf", ["constant", "linear"])
def test_a_regressor_converts_to_predicts_doubles(leaf):
    X, y = table(0)
    model = GETRegressor(depth=3, leaf=leaf, n_starts=1, n_epochs=10, random_state=0).fit(X, y)
    (prediction,) = run(model, X)
    np.testing.assert_array_equal(prediction, model.predict(X))


def test_a_pipeline_ending_in_a_regressor_converts_and_float32_stays_close():
    X, y = table(1)
    pipe = make_pipeline(StandardScaler(), GETRegressor(depth=3, n_starts=1, n_epochs=10, random_state=0)).fit(X, y)
    (prediction,) = run(pipe, X)
    np.testing.assert_allclose(prediction, pipe.predict(X), rtol=1e-9, atol=1e-9 * np.ptp(y))
    (single,) = run(pipe, X.astype(np.float32))
    assert np.median(np.abs(single - pipe.predict(X))) <= 1e-4 * np.ptp(y)


@pytest.mark.parametrize("kind", ["text", "bool", "int", "float"])
def test_a_classifier_converts_to_its_labels_and_probabilities(kind):
    """Boolean labels were declared int64: onnxruntime refused the graph ("tensor(int64) ... tensor(bool)")."""
    X, y = table(2)
    labels = {"text": np.where(y > 0, "high", "low"), "bool": y > 0, "int": np.where(y > 0, 7, -3),
              "float": np.where(y > 0, 1.0, 2.0)}[kind]
    model = GETClassifier(depth=3, n_starts=1, n_epochs=10, random_state=0).fit(X, labels)
    label, proba = run(model, X)
    np.testing.assert_array_equal(label, model.predict(X))
    np.testing.assert_array_equal(proba, model.predict_proba(X))


def test_an_older_opset_gets_a_sentence_that_names_the_one_needed():
    X, y = table(3)
    model = GETRegressor(depth=2, n_starts=1, n_epochs=5, random_state=0).fit(X, y)
    with pytest.raises(RuntimeError, match="target_opset=17"):
        skl2onnx.to_onnx(model, X[:1], target_opset=15)


def test_a_classifier_with_logistic_leaves_converts_to_its_probabilities_within_1e_12():
    X, y = table(4)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    model = GETClassifier(depth=2, leaf="logistic", n_starts=1, n_epochs=10, random_state=0).fit(X, labels)
    assert model.tree_.has_logistic_leaves
    label, proba = run(model, X)
    np.testing.assert_allclose(proba, model.predict_proba(X), rtol=0, atol=1e-12)
    top = np.sort(model.predict_proba(X), axis=1)
    clear = top[:, -1] - top[:, -2] > 1e-12  # a last-bit tie may turn either way
    np.testing.assert_array_equal(label[clear], model.predict(X)[clear])
