"""GETConfig is the one table of GET's settings: every setting has a rule and a meaning, bad values are refused by
name."""

from dataclasses import fields, replace

import numpy as np
import pytest

from get_core.config import ALLOWED, DEFAULTS, GETConfig, polishes


@pytest.mark.parametrize("bad, message", [
    (dict(depth=13), "depth must be an integer from 1 to 12; got 13$"), (dict(leaf="cubic"), "leaf must be"),
    (dict(n_starts=0), "n_starts must be an integer >= 1; got 0$"),
    (dict(alpha_range=(10, 5)),
     "alpha_range must be \\(min, max\\) with 0 < min <= max, both finite; got \\(10, 5\\)$"),
    (dict(alpha_range=(5, float("inf"))), "alpha_range must be .*both finite; got \\(5, inf\\)$"),
    (dict(alpha_range=("a", "b")), "alpha_range must be"), (dict(alpha_range=5), "alpha_range must be"),
    (dict(alpha_range=(1, 2, 3)), "alpha_range must be"),
    (dict(learning_rate=float("nan")), "learning_rate must be a finite number > 0; got nan$"),
    (dict(l1="0.1"), "l1 must be a finite number >= 0; got '0.1'$"),
    (dict(weight_decay=-0.01), "weight_decay must be a finite number >= 0; got -0.01$"),
    (dict(weight_decay=float("inf")), "weight_decay must be a finite number >= 0; got inf$"),
    (dict(device="tpu"), "device must be 'auto', 'cpu' or 'cuda'; got 'tpu'$"),
    (dict(scaling="zscore"), "scaling must be 'minmax' or 'robust'; got 'zscore'$"),
    (dict(linear_leaves="lasso"), "linear_leaves must be 'gcv' or 'ols'; got 'lasso'$"),
    (dict(clip_leaves=1), "clip_leaves must be True or False; got 1$"),
    (dict(polish="yes"), "polish must be True, False or 'auto'; got 'yes'$"), (dict(polish=None), "polish must be"),
    (dict(fixed_alpha=0.0), "fixed_alpha must be None or a finite number > 0; got 0.0$"),
    (dict(random_state=1.5), "random_state must be None or an integer; got 1.5$"),
])
def test_bad_configuration_is_refused_naming_the_parameter_and_its_value(bad, message):
    with pytest.raises(ValueError, match=message):
        GETConfig(**bad)


@pytest.mark.parametrize("name", ["depth", "n_starts", "n_epochs", "n_alphas", "random_state"])
def test_a_bool_is_not_an_integer_setting(name):
    with pytest.raises(ValueError, match=f"{name} must be .*; got True$"):
        GETConfig(**{name: True})


def test_numpy_scalars_pass_as_the_python_numbers_they_hold():
    config = GETConfig(depth=np.int64(3), learning_rate=np.float32(0.5), clip_leaves=np.bool_(False),
                       random_state=np.int32(7), alpha_range=np.array([1, 2]))
    assert config.depth == 3 and config.alpha_range == (1.0, 2.0)


def test_alpha_range_is_kept_as_a_tuple_of_floats_whatever_sequence_it_came_as():
    assert GETConfig(alpha_range=[5, 150]).alpha_range == (5.0, 150.0)
    assert hash(GETConfig(alpha_range=[5, 150])) == hash(GETConfig(alpha_range=(5.0, 150.0)))
    assert replace(DEFAULTS, depth=2).alpha_range == DEFAULTS.alpha_range


def test_every_default_is_allowed_and_every_setting_has_a_rule_and_a_meaning():
    assert list(ALLOWED) == [f.name for f in fields(GETConfig)]
    for f in fields(GETConfig):
        assert ALLOWED[f.name].accepts(f.default), f.name
        assert f.metadata["meaning"] and "\n" not in f.metadata["meaning"], f.name



@pytest.mark.parametrize("settings, n_rows, expected", [
    (dict(), 1000, False),  # "auto" without a budget: the paper's GET, no polish and its cost
    (dict(time_budget=10.0), 1000, True), (dict(polish=np.bool_(True)), 1000, True),
    (dict(polish=True, time_budget=10.0), 1000, True), (dict(polish=False, time_budget=10.0), 1000, False),
    (dict(time_budget=10.0, depth=1), 1000, False),  # a budgeted polish works below the root: none at depth 1
    (dict(polish=True, time_budget=10.0, depth=1), 1000, False),
    (dict(polish=True, depth=1), 1000, True),  # the paper's polish of a depth-1 tree re-fits its root
    (dict(time_budget=10.0), 40_000, False),  # soft epochs on samples: only when asked for
    (dict(polish=True, time_budget=10.0), 40_000, True), (dict(time_budget=10.0, batch_rows=0), 40_000, True),
])
def test_auto_polishes_the_budgeted_fits_with_levels_below_the_root_on_unsampled_tables(settings, n_rows, expected):
    assert polishes(GETConfig(**settings), n_rows) is expected
