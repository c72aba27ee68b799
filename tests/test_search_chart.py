"""The search chart: a point per search fit, against depth (one line per k) or against k at a fixed depth."""

from get_core.views.search_chart import point_label, search_figure


def _point(depth, k, r2, n=10):
    return {"depth": depth, "max_split_features": k, "validation_r2": r2, "n_parameters": n, "widest_split": k or 4,
            "key": f"d{depth}-k{k or 'any'}"}


def test_a_depth_search_plots_a_point_per_depth_and_stars_the_chosen_one():
    points = [_point(1, None, 0.5, 5), _point(2, None, 0.7, 15), _point(3, None, 0.69, 35)]
    figure = search_figure(points, chosen={"key": "d2-kany"})
    r2, params = figure.data
    assert list(r2.x) == [1, 2, 3] and list(r2.y) == [0.5, 0.7, 0.69] and list(r2.customdata) == [
        "d1-kany", "d2-kany", "d3-kany"]
    assert list(r2.marker.symbol) == ["circle", "star", "circle"] and list(params.y) == [5, 15, 35]
    assert figure.layout.xaxis.title.text == "depth"


def test_a_fixed_depth_path_plots_against_features_per_split_and_a_both_search_has_a_line_per_k():
    path = [_point(2, 1, 0.6), _point(2, 2, 0.7), _point(2, None, 0.71)]
    figure = search_figure(path)
    assert list(figure.data[0].x) == ["1", "2", "any"] and figure.layout.xaxis.title.text == "features per split"
    both = search_figure([_point(1, 1, 0.5), _point(2, 1, 0.6), _point(1, None, 0.55), _point(2, None, 0.7)])
    names = [trace.name for trace in both.data]
    assert names[0] == "1 feature per split" and "any features per split" in names and len(both.data) == 4


def test_an_empty_search_says_it_is_waiting_and_a_point_reads_as_a_sentence():
    assert "waiting" in search_figure([]).layout.annotations[0].text
    assert point_label(_point(3, 2, 0.8123, 1234), True) == ("depth 3, 2 features per split (validation R² 0.812, "
                                                            "1,234 parameters)")


def _class_point(depth, leaf, accuracy, n=10):
    return {"depth": depth, "max_split_features": None, "validation_accuracy": accuracy, "n_parameters": n,
            "widest_split": 2, "leaf": leaf, "key": f"d{depth}-kany{'-logistic' if leaf == 'logistic' else ''}"}


def test_a_class_search_that_chooses_the_leaf_has_a_line_per_kind_of_leaves_with_depth_0_on_the_logistic_one():
    points = [_class_point(0, "logistic", 0.80, 3), _class_point(1, "constant", 0.70, 4),
              _class_point(1, "logistic", 0.85, 9), _class_point(2, "constant", 0.78, 10)]
    figure = search_figure(points, chosen={"key": "d1-kany-logistic"})
    accuracy = [trace for trace in figure.data if trace.name in ("logistic leaves", "class-share leaves")]
    logistic, shares = accuracy
    assert logistic.name == "logistic leaves" and list(logistic.x) == [0, 1] and list(shares.x) == [1, 2]
    assert list(logistic.customdata) == ["d0-kany-logistic", "d1-kany-logistic"]
    assert list(logistic.marker.symbol) == ["circle", "star"] and "one logistic model" in logistic.text[0]
    assert [t.name for t in figure.data if t.name.startswith("parameters")] == [
        "parameters (logistic leaves)", "parameters (class-share leaves)"]
    assert point_label(points[0], True) == "depth 0, one logistic model (validation accuracy 80.0%, 3 parameters)"
    assert point_label(points[2], False) == "depth 1, logistic leaves (validation accuracy 85.0%, 9 parameters)"
    one_kind = search_figure([_class_point(1, "constant", 0.7), _class_point(2, "constant", 0.8)])
    assert one_kind.data[0].name == "validation accuracy"  # one kind of leaves: no leaf in the legend
