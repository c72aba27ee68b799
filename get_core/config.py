"""GET's settings: every training parameter's default, allowed values and meaning in one table, and the engine version.

``GETConfig`` is that table. The estimators' parameter constraints, the Train page's defaults and ranges and the
worker all read it, so a new setting is one line here. Torch-free (only ``tree`` below it): pages and the run store
read it without loading the trainer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from get_core.model.tree import LINEAR_LEAF_RULES, MAX_DEPTH

#: Bumped whenever training gives different trees for the same data, settings and seed, so that stored benchmark
#: results (bench/ cell files are keyed by it) are never mixed across engines. 2: the paper's alpha intervals and
#: stages warm-started from each start's best tree. 3: linear leaves chosen by generalized cross-validation
#: (``linear_leaves="gcv"``) and GETRegressorCV's patience 3. 4: a linear leaf's prediction is clamped to its
#: training targets' range (``clip_leaves=True``). 5: under ``"gcv"`` a linear-leaf tree's leaf of fewer than
#: ``engine.leaves.MIN_LEAF_ROWS`` rows predicts its nearest ancestor's mean (constant-leaf trees are unchanged). 6:
#: linear-leaf sums added by blocks of one leaf's rows (the same sums, rounded in another order), and a budgeted
#: polish level of a class tree buys starts before epochs (``race.POLISH_EPOCHS_MORE_STARTS``). 7: logistic leaves
#: trained with the splits in the soft phase and fitted per leaf within the budget (issue 52); class hard losses read
#: each row's class as an index (the same sums in float32, rounded in another order; issue 50); a budgeted race stops
#: in time for the passes over every row and no node refit pass starts past the budget; k-sparse splits keep whole
#: groups of a raw column's inputs (issue 47; plain tables unchanged). 8: on a table with holes the CART start learns
#: a default direction per split (``engine.starts``: missing rows sent CART's way by the "if missing" weight; tables
#: without holes unchanged), GETClassifierCV tempers its probabilities on the validation rows (``calibrate``), and a
#: sloped linear leaf's clamp is narrowed to Tukey's far fences of its targets (``engine.leaves.FENCE``).
#: "Same settings" includes the thread count: the fused CPU kernel splits rows into blocks per thread, so float sums
#: (and, rarely, the tree) can differ between thread counts; the benchmarks pin one thread per fit. Options added
#: later with defaults that train as before (``scaling``, ``max_split_features``, ``time_budget``) need no bump.
ENGINE_VERSION = 8
#: The last version that changed fixed-depth trees with constant leaves (GET, its polish, fixed-alpha ablations):
#: the training-optimality tables, which use nothing else, keep the cells of that version.
CONSTANT_LEAF_ENGINE_VERSION = 2

#: ``batch_rows=None``: soft epochs on SAMPLE_ROWS rows drawn afresh each epoch once a table has more than
#: AUTO_SAMPLE_ABOVE rows (bench.studies.large_data and docs/BENCHMARKS.md: the time and the training R2 against the
#: full batch at the same epochs); at or below it every fit is what it was before sampling existed.
SAMPLE_ROWS = 8192
AUTO_SAMPLE_ABOVE = 32768

#: The most classes the library fits or loads (the estimators, model files): a class tree's leaf and node tables and
#: a fit's one-hot targets grow with the class count, and a depth-12 tree has 4,096 leaves, so beyond a few thousand
#: classes most are never predicted. The app allows fewer (``data.classes.MAX_CLASSES``, 50).
LIBRARY_MAX_CLASSES = 1_000

#: Features per split that ``max_split_features="auto"`` (GETRegressorCV) tries, fewest first (None: dense splits).
SPLIT_FEATURE_PATH = (1, 2, 3, 5, None)
#: GETRegressorCV's search defaults, which the app's runs use too: the depth search stops once SEARCH_PATIENCE depths
#: in a row fail to beat the best validation R2 (the paper's protocol), and the path of k keeps the fewest features
#: whose validation R2 is within SPARSITY_TOLERANCE of the best k's (half a point of R2, about the spread of single
#: fits between seeds at the fast budget).
SEARCH_PATIENCE = 3
SPARSITY_TOLERANCE = 0.005
#: The share of the training rows a depth search holds out to score each depth (the paper's 2:1 split).
VALIDATION_FRACTION = 1 / 3
#: How the UI says a held-out share: fraction -> (what the trees are fitted on, what they are scored on).
_SPLIT_WORDS = {1 / 2: ("half", "the other half"), 1 / 3: ("two thirds", "the other third"),
                1 / 4: ("three quarters", "the other quarter"), 1 / 5: ("four fifths", "the other fifth")}


def validation_split_words(fraction: float = VALIDATION_FRACTION) -> tuple[str, str]:
    """("two thirds", "the other third") for 1/3: the words for the part a search fits on and the part it scores
    on, so the UI never restates the split; a share without a name is written in percent."""
    for share, words in _SPLIT_WORDS.items():
        if abs(fraction - share) < 1e-9:
            return words
    return f"{1 - fraction:.0%}", f"the other {fraction:.0%}"


def split_feature_path(max_split_features: int | str | None, p: int) -> list[int | None]:
    """The values of k to search on ``p`` features: the path for "auto" (k >= p is the dense tree, tried once as
    None), else the one given."""
    if max_split_features != "auto":
        return [max_split_features]
    return [k for k in SPLIT_FEATURE_PATH if k is None or k < p]


LEAVES = ("constant", "linear")
#: A classification tree's leaves: class shares ("constant") or a multinomial logistic model each ("logistic").
CLASS_LEAVES = ("constant", "logistic")
DEVICES = ("auto", "cpu", "cuda")
#: Feature scalings: "minmax" maps each feature's range to [0, 1] (the paper's); "robust" its 1st-99th percentiles.
SCALINGS = ("minmax", "robust")


def _is_int(value: object) -> bool:
    """A bool is not an integer here: ``depth=True`` is a mistake, not depth 1."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _real(value: object) -> float:
    """``value`` as a float, NaN when it is not a real number (a bool or a string is not): NaN fails every range
    check, so validation names the parameter instead of raising a TypeError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return math.nan
    return float(value)


@dataclass(frozen=True)
class Integer:
    """An integer from ``low`` to ``high`` (None: no upper bound); ``optional``: None is allowed too."""

    low: int
    high: int | None = None
    optional: bool = False

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.optional
        return _is_int(value) and self.low <= value and (self.high is None or value <= self.high)

    def describe(self) -> str:
        text = f"an integer >= {self.low}" if self.high is None else f"an integer from {self.low} to {self.high}"
        return f"None or {text}" if self.optional else text


@dataclass(frozen=True)
class Number:
    """A finite real number above ``low`` (or at it, when ``inclusive``); ``optional``: None is allowed too."""

    low: float
    inclusive: bool = False
    optional: bool = False

    def accepts(self, value: object) -> bool:
        if value is None:
            return self.optional
        number = _real(value)
        return (self.low <= number if self.inclusive else self.low < number) and number < math.inf

    def describe(self) -> str:
        text = f"a finite number {'>=' if self.inclusive else '>'} {self.low:g}"
        return f"None or {text}" if self.optional else text


@dataclass(frozen=True)
class Choice:
    """One of ``options``."""

    options: tuple[str, ...]

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self.options

    def describe(self) -> str:
        quoted = [repr(option) for option in self.options]
        return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


@dataclass(frozen=True)
class Flag:
    """True or False."""

    def accepts(self, value: object) -> bool:
        return isinstance(value, (bool, np.bool_))

    def describe(self) -> str:
        return "True or False"


@dataclass(frozen=True)
class FlagOrAuto:
    """True, False or "auto" (the fit decides from the other settings)."""

    def accepts(self, value: object) -> bool:
        return isinstance(value, (bool, np.bool_)) or (isinstance(value, str) and value == "auto")

    def describe(self) -> str:
        return "True, False or 'auto'"


@dataclass(frozen=True)
class Span:
    """A (min, max) pair of finite numbers with 0 < min <= max."""

    def accepts(self, value: object) -> bool:
        try:
            items = tuple(value)  # type: ignore[arg-type]
        except TypeError:
            return False
        low, high = (_real(v) for v in items) if len(items) == 2 else (math.nan, math.nan)
        return 0 < low <= high < math.inf

    def describe(self) -> str:
        return "(min, max) with 0 < min <= max, both finite"


@dataclass(frozen=True)
class Seed:
    """None (fresh entropy) or an integer."""

    def accepts(self, value: object) -> bool:
        return value is None or _is_int(value)

    def describe(self) -> str:
        return "None or an integer"


Allowed = Integer | Number | Choice | Flag | FlagOrAuto | Span | Seed


def setting(default: Any, allowed: Allowed, meaning: str) -> Any:
    """One row of the table: a field of ``GETConfig`` with its allowed values and meaning."""
    return field(default=default, metadata={"allowed": allowed, "meaning": meaning})


@dataclass(frozen=True)
class GETConfig:
    """The settings of one GET fit, checked when built (a ValueError names the first bad one and its value)."""

    depth: int = setting(4, Integer(1, MAX_DEPTH), "Levels of splits: the tree has 2 ** depth leaves.")
    leaf: str = setting("constant", Choice(LEAVES),
                        "'constant': GET, a constant per leaf; 'linear': GET-Linear, a linear model per leaf.")
    linear_leaves: str = setting("gcv", Choice(LINEAR_LEAF_RULES),
                                 "GET-Linear only: which leaves keep their slopes. 'gcv' keeps a leaf's least-squares "
                                 "fit only where generalized cross-validation prefers it to the leaf's mean, and gives "
                                 "a leaf of too few rows its nearest larger ancestor's mean; 'ols' is "
                                 "the paper's plain least squares in every leaf of at least p + 2 rows (leaves.py).")
    clip_leaves: bool = setting(True, Flag(),
                                "GET-Linear only, not in the paper: clamp each linear leaf's prediction to the range "
                                "of the training targets that reached it, narrowed for a leaf with slopes to Tukey's "
                                "far fences of those targets (Q1 - 3 IQR, Q3 + 3 IQR; engine.leaves.FENCE), so a line "
                                "never extrapolates beyond what its leaf saw.")
    class_leaf: str = setting("constant", Choice(CLASS_LEAVES),
                              "Classification only: 'constant', each leaf predicts its class shares; 'logistic', each "
                              "leaf a multinomial logistic model on the scaled inputs, its L2 strength (or its class "
                              "shares) chosen by cross-validation on its own training rows (engine.logistic).")
    n_starts: int = setting(10, Integer(1),
                            "Initial trees optimized together: start 0 from CART, the others random.")
    n_epochs: int = setting(3000, Integer(1), "Epochs per alpha stage.")
    alpha_range: tuple[float, float] = setting((5.0, 150.0), Span(),
                                               "The sigmoid's scale factors over all stages, (min, max): each stage "
                                               "draws its alpha from an interval within them "
                                               "(schedule.alpha_stage_bounds).")
    n_alphas: int = setting(2, Integer(1), "Stages per start, with increasing alphas.")
    learning_rate: float = setting(0.01, Number(0), "Adam's step after warm-up, cosine-annealed over each stage.")
    l1: float = setting(0.0, Number(0, inclusive=True),
                        "L1 penalty: l1 * sum|a| of the split weights is added to the (mean) soft loss, paper eq. "
                        "(11).")
    weight_decay: float = setting(0.0, Number(0, inclusive=True),
                                  "Decoupled (AdamW) decay per step; 0: none, the paper's optimizer; the authors' "
                                  "code keeps torch.optim.AdamW's 0.01 (bench.studies.variants).")
    polish: bool | str = setting("auto", FlagOrAuto(),
                                 "Polish every subtree after training (paper section 4.3); 'auto': only with a "
                                 "time_budget and full soft epochs, and then below the root (config.polishes).")
    random_state: int | None = setting(None, Seed(), "Seed of the starts, alphas and row samples; None: fresh.")
    device: str = setting("auto", Choice(DEVICES), "Where torch trains; 'auto': CUDA when torch sees one.")
    fixed_alpha: float | None = setting(None, Number(0, optional=True),
                                        "Ablation (paper Table 4): every stage uses this alpha instead of the "
                                        "schedule.")
    scaling: str = setting("minmax", Choice(SCALINGS),
                           "How each feature is mapped to [0, 1] before training: 'minmax' (the paper's) or 'robust' "
                           "(its 1st-99th percentiles, for features with far outliers; fit warns when min-max "
                           "squeezes a feature, data.squeezed_features).")
    max_split_features: int | None = setting(None, Integer(1, optional=True),
                                             "None: dense splits; k: every split uses at most k features, exactly "
                                             "(k=1: an axis-aligned tree optimized as a whole; sparse.py).")
    time_budget: float | None = setting(None, Number(0, optional=True),
                                        "None: n_starts x n_epochs as given; seconds: the fit chooses starts and "
                                        "epochs from timings on this data, races them, then refits the best tree's "
                                        "splits node by node, to end near that many seconds (race.py); with the "
                                        "default polish, half of it optimizes and half polishes the subtrees below "
                                        "the root.")
    batch_rows: int | None = setting(None, Integer(0, optional=True),
                                     f"Not in the paper: rows per soft epoch, drawn afresh each epoch; None: "
                                     f"{SAMPLE_ROWS} once a table has more than {AUTO_SAMPLE_ABOVE} rows, else all; k: "
                                     "k whenever there are more; 0: always all. The leaves and the choice of the best "
                                     "tree always use every row (soft_rows).")

    def __post_init__(self) -> None:
        for name, allowed in ALLOWED.items():
            value = getattr(self, name)
            if not allowed.accepts(value):
                raise ValueError(f"{name} must be {allowed.describe()}; got {value!r}")
        # JSON and scikit-learn parameters give a list or ints: one form from here on (hashable, as stored in meta)
        object.__setattr__(self, "alpha_range", tuple(float(a) for a in self.alpha_range))


def polishes(config: "GETConfig", n_rows: int) -> bool:
    """Whether a fit with ``config`` on ``n_rows`` rows polishes. ``polish="auto"`` does when the fit has a time budget
    and every soft epoch uses every row (``soft_rows``). A budgeted polish works below the root
    (``polish.polished_levels``), so a budgeted depth-1 tree never polishes.

    Why only then: a budgeted fit that gives half its seconds to polishing the subtrees below the root beats one that
    races for all of them (issue 21, docs/BENCHMARKS.md): on planted dense depth-4 trees the share of the noise
    ceiling rose from 78-89% to 94-97% in 10 s. Without a budget, "auto" keeps the paper's GET (no polish) and its
    cost. On a sampled table the polish's steps on every row (a CART per subtree, each level's routing) are not in
    its plan: 1,000,000 x 10 at depth 6 with 60 s took 115 s, 80 of them polishing."""
    if config.time_budget is not None and config.depth < 2:
        return False
    if isinstance(config.polish, str):
        return config.time_budget is not None and soft_rows(config.batch_rows, n_rows) is None
    return bool(config.polish)


def soft_rows(batch_rows: int | None, n_rows: int) -> int | None:
    """Rows per soft epoch under ``GETConfig.batch_rows`` for tables of up to ``n_rows`` rows; None: all of them."""
    if batch_rows is None:
        return SAMPLE_ROWS if n_rows > AUTO_SAMPLE_ABOVE else None
    return batch_rows if 0 < batch_rows < n_rows else None


#: Each setting's allowed values, by name, in the order of ``GETConfig``'s fields.
ALLOWED: dict[str, Allowed] = {f.name: f.metadata["allowed"] for f in fields(GETConfig)}
#: The defaults, as a config.
DEFAULTS = GETConfig()
#: The app's default run (the Train page's starting settings; ``bench.studies.app_default`` measures it): GET-Linear
#: at depth 5 with a budget of 10 s for its GET fit (the baselines follow uncut, ``runs.training``). The library keeps
#: the paper's GET (``DEFAULTS``). Why (docs/BENCHMARKS.md, "The app's default run", the 12 shared datasets, through
#: the worker's code path): depth 4 with constant leaves trailed the forest by 7.2 points of test R2 on average
#: (airfoil 76 against 92); linear leaves at depth 5 came closest; depth 6 was no better (abalone over-fits) and
#: neither was a 30-s budget on the seven datasets measured.
#: The cost is readability: 32 leaves, each a line in every feature, instead of 16 numbers (the diagram opens with
#: the levels that stay readable; constant leaves, fewer features per split or a shallower depth are one click away).
APP_DEFAULTS = replace(DEFAULTS, depth=5, leaf="linear", time_budget=10.0)
#: The leaves a class run's search may be asked for: one kind (``CLASS_LEAVES``), or "auto", GETClassifierCV's
#: choice (each depth's tree scored with its logistic leaves and with its class shares; depth 0, one logistic
#: model, tried too). A fixed-depth class run takes ``APP_DEFAULTS.class_leaf``'s kind of choice, with no "auto".
SEARCH_CLASS_LEAVES = ("auto", *CLASS_LEAVES)
#: The app's class leaves under "choose for me": the search chooses them too (issue 52: 87.27% against 86.64 for
#: class shares alone on the 12 shared class tables, docs/BENCHMARKS.md "Classification").
APP_SEARCH_CLASS_LEAF = "auto"
