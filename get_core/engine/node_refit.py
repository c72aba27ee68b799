"""TAO-style node refits of a k-sparse tree (Carreira-Perpinan & Tavallali 2018), run after the GET stages.

With the rest of the tree fixed, the hard loss depends on node t's split only through which child each of t's rows
takes: row i costs ``l_left[i]`` through the left subtree and ``l_right[i]`` through the right one (their current
leaves). So the best split of t is a cost-sensitive two-class problem on t's rows. Candidates, each with an exact
threshold scan (every cut between two distinct projections):
  * every single feature (all of them: the exact axis-aligned step, what k=1 needs);
  * the current split's direction (so the node's own split is always a candidate);
  * for 2 <= k < p, every support of 2..k of the ``TOP_FEATURES[k]`` best single features, its direction fitted by
    weighted least squares on the preferred side (+1 right, -1 left, weight |l_right - l_left|);
  * for a dense tree (k >= p, run after a budgeted fit): that least-squares direction on every feature, and the
    current direction turned towards it by the steps of ``DENSE_TURNS`` (both scaled to unit length); only nodes
    with ``DENSE_MIN_ROWS_PER_FEATURE`` rows per split parameter. On the naval
    datasets at depth 4 this took a 10-second fit's training R2 from 88-90 to 94 in under a second.
At the deepest level of a constant-leaf tree the scan scores the cut with both children's means refit (the exact
CART criterion) instead of the current leaves. Nodes of one level have disjoint rows, so a level is refit at once:
the new splits are written, the leaves recomputed from the hard routing, and a node's change is kept only if its rows'
float64 squared error dropped; so the tree's hard training loss never rises. Levels go deepest first, ``PASSES``
times (or until a pass changes nothing, or a deadline passes).
Only splits of at most k non-zero weights are ever written. A classifier (``y_scaled`` one-hot) is the same with each
row's Brier score at the leaves' class shares as its loss (``leaves.row_losses``), the children's leaves fixed at
every level; ``sample_weight`` weights every row's loss.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from get_core.budget import now
from get_core.engine import leaves
from get_core.engine.plan import Plan
from get_core.model import routing
from get_core.model.tree import ObliqueTree

#: Bottom-up sweeps over the levels: after fixed-budget sparse fits, and at most after budgeted fits (deadline).
PASSES = 2
BUDGETED_PASSES = 8
#: Dense trees: the current direction u plus t times the least-squares one v (unit vectors), for each t here.
DENSE_TURNS = (0.1, 0.3, 1.0, 3.0)
#: Dense trees: only nodes with at least this many rows per parameter of a split (p + 1) are refit. Exact scans on
#: small nodes fit noise: at depth 8 with no floor, abalone's test R2 fell 4.5 points and delta_elevators' 4.1 (20 s
#: budget, seed 0); with 30 abalone's rose 2.8, delta_elevators' fell 0.7, naval_compressor's rose 7.
DENSE_MIN_ROWS_PER_FEATURE = 30
#: For k >= 2: supports are drawn from this many best single features of the node (C(m, 2) + ... + C(m, k) each).
TOP_FEATURES = {2: 10, 3: 7}
TOP_FEATURES_WIDE = 5  # k >= 4
RIDGE = 1e-9
#: A node's candidate must beat its current split by this share of its rows' loss to be tried.
MIN_GAIN = 1e-9


def refit_nodes(tree: ObliqueTree, X: np.ndarray, y_scaled: np.ndarray, k: int, linear_rule: str = "gcv",
                clip: bool = True, passes: int = PASSES, deadline: float | None = None,
                sample_weight: np.ndarray | None = None, decisions: Plan | None = None,
                scaled: bool = False, first_by: float | None = None) -> ObliqueTree:
    """Refit ``tree``'s splits in place (see the module docstring); returns it. ``y_scaled`` in the tree's units.
    ``deadline`` (``budget.now``): no pass starts after it; the first always runs, unless ``first_by`` has passed (a
    budgeted fit's end: one pass at depth 9 on 25,000 rows of 100 inputs took 11.6 s of a 1.1-s search fit whose
    probes had spent it). Whether a pass still starts is ``decisions``' "refit_stop" question (a budgeted fit's
    ``plan``).
    ``scaled``: X is already ``tree.scale_X(X)``; every routing below reuses these scaled rows."""
    t0 = time.perf_counter()
    decisions = Plan() if decisions is None else decisions
    Xs = X if scaled else tree.scale_X(X)
    ys = np.asarray(y_scaled, dtype=np.float64)
    accepted = swept = 0
    for sweep in range(passes):
        limit = deadline if sweep else first_by
        if limit is not None and decisions.stops("refit_stop", sweep, lambda: now() > limit):
            break
        changed = sum(_refit_level(tree, Xs, ys, level, k, linear_rule, clip, sample_weight)
                      for level in reversed(range(tree.depth)))
        accepted, swept = accepted + changed, swept + 1
        if not changed:
            break
    tree.meta.update(node_refit_seconds=time.perf_counter() - t0, node_refit_accepted=accepted,
                     node_refit_passes=swept)
    return tree


def _refit_level(tree: ObliqueTree, Xs: np.ndarray, ys: np.ndarray, level: int, k: int, linear_rule: str,
                 clip: bool, sw: np.ndarray | None) -> int:
    """Propose a split for every node of ``level``, keep the ones that lower their rows' loss; returns how many.
    ``Xs``: the rows scaled once (``tree.scale_X``), routed as the model routes them (``routing``)."""
    at = routing.decision_path(tree, Xs, scaled=True)[:, level]
    bottom_means = level == tree.depth - 1 and tree.leaf_type == "constant" and sw is None
    l_left = _loss_from(tree, Xs, ys, 2 * at, level + 1, sw)
    l_right = _loss_from(tree, Xs, ys, 2 * at + 1, level + 1, sw)
    proposals: dict[int, tuple[np.ndarray, float]] = {}
    for t in range(2 ** level, 2 ** (level + 1)):
        rows = np.flatnonzero(at == t)
        if len(rows) < (2 if k < Xs.shape[1] else DENSE_MIN_ROWS_PER_FEATURE * (Xs.shape[1] + 1)):
            continue
        found = _best_split(Xs[rows], ys[rows], l_left[rows], l_right[rows], tree.weights[t - 1],
                            tree.thresholds[t - 1], k, bottom_means)
        if found is not None:
            proposals[t] = found
    if not proposals:
        return 0
    nodes = np.array(sorted(proposals)) - 1
    errors = leaves.row_losses(tree, Xs, ys, sw, scaled=True)
    old_w, old_b = tree.weights[nodes].copy(), tree.thresholds[nodes].copy()
    for t, (w, b) in proposals.items():
        tree.weights[t - 1], tree.thresholds[t - 1] = w, b
    leaves.refit_tree_leaves(tree, Xs, ys, linear_rule, clip, sw, scaled=True)
    new_errors = leaves.row_losses(tree, Xs, ys, sw, scaled=True)
    worse = [i for i, t in enumerate(nodes + 1) if new_errors[at == t].sum() >= errors[at == t].sum()]
    if worse:
        tree.weights[nodes[worse]], tree.thresholds[nodes[worse]] = old_w[worse], old_b[worse]
        leaves.refit_tree_leaves(tree, Xs, ys, linear_rule, clip, sw, scaled=True)
    return len(nodes) - len(worse)


def _loss_from(tree: ObliqueTree, Xs: np.ndarray, ys: np.ndarray, node: np.ndarray, level: int,
               sw: np.ndarray | None) -> np.ndarray:
    """Each row's (weighted) loss when it enters the tree at ``node`` (ids at ``level``) and follows the splits
    below: squared error, or a classifier's Brier score at the leaves' class shares."""
    pred = _predict_from(tree, Xs, node, level)
    losses = ((pred - ys) ** 2).sum(axis=1) if tree.is_classifier else (pred - ys) ** 2
    return losses if sw is None else losses * sw


def _predict_from(tree: ObliqueTree, Xs: np.ndarray, node: np.ndarray, level: int) -> np.ndarray:
    """Each row's prediction when it enters the tree at ``node`` (ids at ``level``) and follows the splits below
    (a classifier's: its leaf's class shares, (n, C))."""
    for _ in range(level, tree.depth):
        right = np.einsum("ij,ij->i", Xs, tree.weights[node - 1]) > tree.thresholds[node - 1]
        node = 2 * node + right
    leaf = node - tree.n_leaves
    if tree.is_classifier:
        return leaves.leaf_values(tree)[leaf]
    raw = tree.leaf_intercepts[leaf]
    if tree.leaf_type == "linear":
        raw = raw + np.einsum("ij,ij->i", Xs, tree.leaf_coefs[leaf])
    return np.clip(raw, tree.leaf_lower[leaf], tree.leaf_upper[leaf])


def _best_split(Xs: np.ndarray, ys: np.ndarray, l_left: np.ndarray, l_right: np.ndarray, w_now: np.ndarray,
                b_now: float, k: int, bottom_means: bool) -> tuple[np.ndarray, float] | None:
    """The best candidate split (weights, threshold) of one node's rows, or None when none beats the current one."""
    n, p = Xs.shape
    extra = l_right - l_left  # what sending a row right costs over sending it left
    now = float(l_left.sum() + extra[Xs @ w_now > b_now].sum())
    if bottom_means:
        now = _two_means_cost(ys[Xs @ w_now > b_now], ys[Xs @ w_now <= b_now])
    directions = [np.eye(p), w_now[:, None]]
    if k >= p and p >= 2 and np.any(extra):
        directions.append(_turns(w_now, _least_squares_directions(Xs, extra, [tuple(range(p))], p)[:, 0]))
    elif k >= 2 and np.any(extra):
        single_cost, _ = _scan(Xs, ys, l_left, extra, bottom_means)
        top = np.argsort(single_cost, kind="stable")[:TOP_FEATURES.get(k, TOP_FEATURES_WIDE)]
        supports = [s for size in range(2, min(k, len(top)) + 1) for s in itertools.combinations(sorted(top), size)]
        directions.append(_least_squares_directions(Xs, extra, supports, p))
    W = np.hstack(directions)  # (p, C)
    cost, cut = _scan(Xs @ W, ys, l_left, extra, bottom_means)
    best = int(np.argmin(cost))
    if not cost[best] < now - MIN_GAIN * max(abs(now), 1e-12):
        return None
    w = W[:, best].copy()
    w[np.abs(w) == 0] = 0.0  # +0.0, never -0.0
    assert np.count_nonzero(w) <= k or best == p  # the current split already respects k
    return w, float(cut[best])


def _turns(w_now: np.ndarray, towards: np.ndarray) -> np.ndarray:
    """(p, len(DENSE_TURNS) + 1): the unit current direction turned towards ``towards`` by each step, and
    ``towards``."""
    u = w_now / max(float(np.linalg.norm(w_now)), 1e-300)
    v = towards / max(float(np.linalg.norm(towards)), 1e-300)
    return np.stack([u + t * v for t in DENSE_TURNS] + [towards], axis=1)


def _least_squares_directions(Xs: np.ndarray, extra: np.ndarray, supports: list[tuple[int, ...]],
                              p: int) -> np.ndarray:
    """(p, len(supports)): per support, the weights of sum |extra| (x_S.w + c - side)^2 at its minimum, where side
    is +1 for rows cheaper on the right; zero outside the support."""
    X1 = np.hstack([Xs, np.ones((len(Xs), 1))])
    gram = X1.T @ (np.abs(extra)[:, None] * X1)
    rhs = X1.T @ -extra
    out = np.zeros((p, len(supports)))
    for j, support in enumerate(supports):
        idx = list(support) + [p]
        g = gram[np.ix_(idx, idx)]
        g = g + RIDGE * (np.trace(g) + 1.0) * np.eye(len(idx))
        out[list(support), j] = np.linalg.solve(g, rhs[idx])[:-1]
    return out


def _scan(Z: np.ndarray, ys: np.ndarray, l_left: np.ndarray, extra: np.ndarray,
          bottom_means: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per column of the projections Z (n, C): the least cost over cuts between distinct values, and that cut
    (rows with z > cut go right). Cost: the fixed children's losses, or with ``bottom_means`` both sides' squared
    error about their own means. A column with one distinct value costs inf."""
    n = len(Z)
    order = np.argsort(Z, axis=0, kind="stable")
    zs = np.take_along_axis(Z, order, axis=0)
    if bottom_means:
        y = ys[order]
        s1, s2 = np.cumsum(y, axis=0), np.cumsum(y * y, axis=0)
        m = np.arange(1, n)[:, None]  # rows on the left for a cut after position m - 1
        left = s2[:-1] - s1[:-1] ** 2 / m
        right = (s2[-1] - s2[:-1]) - (s1[-1] - s1[:-1]) ** 2 / (n - m)
        cost = left + right
    else:
        suffix = np.cumsum(extra[order][::-1], axis=0)[::-1]  # suffix[j]: extra of the rows from sorted position j
        cost = l_left.sum() + suffix[1:]
    cost = np.where(zs[1:] > zs[:-1], cost, np.inf)  # (n - 1, C): a cut after each position but the last
    at = np.argmin(cost, axis=0)
    cols = np.arange(Z.shape[1])
    lo, hi = zs[at, cols], zs[at + 1, cols]
    return cost[at, cols], lo + (hi - lo) / 2


def _two_means_cost(right: np.ndarray, left: np.ndarray) -> float:
    return float(sum(((side - side.mean()) ** 2).sum() for side in (left, right) if len(side)))
