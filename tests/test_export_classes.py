"""Exports of a classification tree: Python and C predict exactly the classes and probabilities ``predict`` and
``predict_proba`` give; the rules, DOT, report and summary speak of classes."""

from html import escape

import numpy as np
import pytest

from get_core import export
from get_core.model import codegen
from tests.test_export import NASTY, _rows, needs_gcc, run_c_model
from tests.trees import class_stump, make_class_tree

LABELS = {"text": ["bad credit", 'say "no"', "ünï", "a\\b", "*/"], "int": [-7, 0, 3], "float": [0.5, 2.0],
          "bool": [False, True]}


@pytest.fixture(params=list(LABELS))
def model(request):
    """A depth-3 classification tree with the labels of one kind, two leaves tied between their top classes."""
    tree, X, _ = make_class_tree(depth=3, p=len(NASTY), names=NASTY, labels=LABELS[request.param], seed=6)
    tree.leaf_proba[0] = np.full(tree.n_classes, 1 / tree.n_classes)
    tree.leaf_proba[1, :] = 0.0
    tree.leaf_proba[1, -2:] = 0.5  # a tie between the last two: the first of them wins
    return tree, _rows(tree, X)


def test_python_source_predicts_the_same_labels_and_probabilities(model):
    tree, rows = model
    namespace = {}
    exec(compile(codegen.python_source(tree), "generated.py", "exec"), namespace)
    labels = [namespace["predict"](list(r)) for r in rows]
    assert labels == tree.predict(rows).tolist()
    assert [type(v) for v in labels] == [type(v) for v in tree.predict(rows).tolist()]
    np.testing.assert_array_equal([namespace["predict_proba"](list(r)) for r in rows], tree.predict_proba(rows))
    assert [namespace["leaf"](list(r)) for r in rows] == tree.apply(rows).tolist()
    assert list(namespace["CLASSES"]) == tree.classes
    assert namespace["predict_named"](**dict(zip(namespace["IDENTIFIERS"], rows[0]))) == labels[0]


HARNESS = r"""
#include <stdio.h>
int get_predict(const double x[], double *proba);
int get_leaf(const double x[]);
extern const char *const GET_CLASS_NAMES[];
int main(void) {
    int n, p, c;
    if (scanf("%d %d %d", &n, &p, &c) != 3) return 2;
    double x[64], proba[64];
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < p; ++j) if (scanf("%lf", &x[j]) != 1) return 3;
        int k = get_predict(x, proba);
        if (get_predict(x, NULL) != k) return 4;
        printf("%d %d", get_leaf(x), k);
        for (int j = 0; j < c; ++j) printf(" %.17g", proba[j]);
        printf("\n");
    }
    for (int k = 0; k < c; ++k) printf("%s\n", GET_CLASS_NAMES[k]);
    return 0;
}
"""


@needs_gcc
def test_c_source_returns_the_class_index_and_fills_the_probabilities(model, tmp_path):
    tree, rows = model
    lines = run_c_model(tree, HARNESS, f"{len(rows)} {rows.shape[1]} {tree.n_classes}", rows, tmp_path)
    values = [line.split() for line in lines[: len(rows)]]
    np.testing.assert_array_equal([int(v[0]) for v in values], tree.apply(rows))
    assert [tree.classes[int(v[1])] for v in values] == tree.predict(rows).tolist()
    np.testing.assert_array_equal([[float(p) for p in v[2:]] for v in values], tree.predict_proba(rows))
    assert lines[len(rows):] == [c if isinstance(c, str) else repr(c) for c in tree.classes]


def test_rules_of_a_class_stump_return_the_label_and_list_the_probabilities():
    rules = export.rules_text(class_stump(), target_name="credit")
    assert rules.startswith("# GET oblique classification tree: depth 1, 2 classes ('bad', 'good'), 2 features, "
                            "5 parameters.\n")
    assert "'return' gives the predicted class of credit" in rules
    assert rules.endswith(
        "if 2*temp - 1*pressure <= 3:  # node 1\n"
        "    return 'bad'  # leaf 2, 5 train rows; probabilities 'bad' 0.8, 'good' 0.2\n"
        "else:\n"
        "    return 'good'  # leaf 3, 4 train rows; probabilities 'bad' 0.25, 'good' 0.75\n")


def test_rules_as_written_give_the_label_predict_gives(model):
    tree, rows = model
    lines = export.rule_lines(tree)
    returned = {int(line.split("# leaf ")[1].split(",")[0]): line.split("return ", 1)[1].split("  # leaf")[0]
                for line in lines if "return " in line}
    assert [returned[leaf] for leaf in tree.apply(rows)] == [codegen.label_literal(c) for c in tree.predict(rows).tolist()]


def test_the_report_of_a_classifier_lists_its_classes_compares_accuracy_and_embeds_the_model():
    from get_core.model import model_file
    from get_core.views import summary

    tree, X, y = make_class_tree(depth=2, labels=["<b>bad</b>", "good"], seed=3)
    baselines = {"get": {"name": "GET", "accuracy": 0.91, "log_loss": 0.3},
                 "models": {"cart": {"name": "CART", "accuracy": 0.8, "balanced_accuracy": 0.75, "roc_auc": 0.85}}}
    html = export.html_report(tree, created="now", baselines=baselines,
                              in_words=summary.summarize(tree, X[150:], y[150:]))
    assert "<b>bad" not in html and "&lt;b&gt;bad&lt;/b&gt;, good" in html  # the Classes row, escaped
    assert "<th>Test accuracy</th><th>Balanced accuracy</th><th>Log loss</th><th>ROC AUC</th>" in html
    assert "R\u00b2" not in html and '<td>CART</td><td class="num">0.8</td><td class="num">0.75</td>' in html
    assert "classifies" in html and "groups" in html  # the summary speaks of classes
    rules = export.rules_text(tree)
    assert escape(rules) in html and ("return '<b>bad</b>'" in rules or "return 'good'" in rules)
    embedded = html.split('id="get-model">', 1)[1].split("</script>", 1)[0]
    assert model_file.load_model_json(embedded).classes == tree.classes
