"""The Compare page's class figures: a confusion matrix's axes name the classes, whatever they look like."""

from get_core.views import class_compare


def test_a_0_1_targets_confusion_matrix_has_two_named_classes_on_each_axis_not_a_number_line():
    """Issue 48: classes 0 and 1 drew numeric axes from -0.5 to 1.5."""
    figure = class_compare.confusion_figure([[5, 1], [2, 7]], [0, 1], "GET")
    assert figure.layout.xaxis.type == figure.layout.yaxis.type == "category"
    assert list(figure.data[0].x) == list(figure.data[0].y) == ["0", "1"]
