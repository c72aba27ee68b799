"""Subtree polish (the paper's section 4.3 and Algorithm 2), batched level by level.

Branch nodes are visited breadth-first. The subtree under node t sees only the rows that reach t, and with the rest of
the tree fixed the whole tree's loss changes exactly by that subtree's change on those rows; so every node of one
level (disjoint row sets) is polished in one batched program, each as its own problem of depth D - level with starts:
the current subtree (warm start), a CART fitted on the node's rows, and random trees. A node's new subtree is kept
only if the whole tree's float64 hard training loss drops; nodes with fewer than 2 rows or a constant target are
skipped.

With a time budget (not in the paper) the root is left alone, since the race before the polish already optimized the
whole tree, and the levels below it share the polish's seconds in proportion to the leaves under one of their
subtrees (``level_seconds``): a soft epoch of a level costs about n times that. Measured on planted dense depth-4
trees, 10 s (issue 21, seeds 0-4): these levels this way reached 96.4-97.9% of the noise ceiling, every level with
an equal share 91.5-97.3%, and the race alone 78.4-97.7%.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from get_core.budget import Budget, now
from get_core.engine import leaves
from get_core.config import GETConfig
from get_core.engine.memory import max_starts
from get_core.engine.optimize import Problems, alpha_schedule, budgeted, initial_params, resolve_device, run_stages
from get_core.engine.plan import Plan
from get_core.engine.progress import Reporter
from get_core.engine.race import MIN_EPOCHS_MORE_STARTS, POLISH_EPOCHS_MORE_STARTS, Race
from get_core.engine.soft import Params
from get_core.model import routing
from get_core.model.tree import ObliqueTree


def subtree_nodes(root: int, depth: int) -> np.ndarray:
    """Heap ids of the branch nodes of the depth-``depth`` subtree under ``root``, in the subtree's own heap order."""
    k = np.arange(1, 2 ** depth)
    level = np.floor(np.log2(k)).astype(int)
    return root * 2 ** level + (k - 2 ** level)


def polish(tree: ObliqueTree, X: np.ndarray, y: np.ndarray, config: GETConfig, gen: torch.Generator,
           reporter: Reporter, fit: Budget | None = None, sample_weight: np.ndarray | None = None,
           decisions: Plan | None = None) -> ObliqueTree:
    """Polish ``tree`` (trained on X, y in original units; a classifier's y one-hot (n, C)) in place of a copy;
    returns the polished tree. With ``config.time_budget``, the polish ends about at the end of the ``fit``'s budget
    (default: that many seconds from now), its levels racing their starts (``race``), their clock-dependent
    decisions through ``decisions`` (the fit's ``plan``). ``sample_weight``: the training rows' weights, mean 1."""
    sw = sample_weight
    decisions = Plan() if decisions is None else decisions
    t0 = now()
    if fit is None and config.time_budget is not None:
        fit = Budget(config.time_budget, t0)
    tree = copy.deepcopy(tree)
    ys = (np.asarray(y, dtype=np.float64) - tree.y_min) / tree.y_scale
    Xs = tree.scale_X(X)
    device = resolve_device(config.device)
    accepted, visited = 0, 0
    span_lo, span_hi = reporter.span
    levels = polished_levels(tree.depth, config.time_budget is not None)
    for done, level in enumerate(levels):
        if fit is not None and decisions.stops("polish_stop", level, lambda: fit.left() <= 0):
            break  # a level's probes and CART starts alone would overrun the budget
        path = routing.decision_path(tree, Xs, scaled=True)[:, level]
        errors = leaves.row_losses(tree, Xs, ys, sw, scaled=True)
        nodes = [t for t in range(2 ** level, 2 ** (level + 1))
                 if np.count_nonzero(path == t) >= 2 and np.ptp(ys[path == t], axis=0).any()]
        if not nodes:
            continue
        visited += len(nodes)
        sub_depth = tree.depth - level
        rows = [np.flatnonzero(path == t) for t in nodes]
        subsets = [(Xs[r], ys[r]) if sw is None else (Xs[r], ys[r], sw[r]) for r in rows]
        problems = Problems.from_arrays(subsets, device)
        ids = np.stack([subtree_nodes(t, sub_depth) - 1 for t in nodes])  # (B, 2^sub_depth - 1) weight rows
        warm = Params(torch.as_tensor(tree.weights[ids], dtype=torch.float32),
                      torch.as_tensor(tree.thresholds[ids], dtype=torch.float32), None, None)
        level_config, race = _level_plan(problems, config, sub_depth, gen, fit, level, decisions, len(ys))
        params = initial_params(problems, subsets, level_config, sub_depth, gen, warm=warm)
        alphas = alpha_schedule(len(nodes) * level_config.n_starts, level_config, gen)
        share = torch.tensor([len(r) / len(ys) for r in rows], dtype=torch.float64)
        outside = float(errors[np.setdiff1d(np.arange(len(ys)), np.concatenate(rows))].sum() / len(ys))
        level_span = (span_lo + (span_hi - span_lo) * done / len(levels),
                      span_lo + (span_hi - span_lo) * (done + 1) / len(levels))
        level_reporter = Reporter(reporter.on_progress, reporter.y_var, "polish", level_span, share, outside)
        result = run_stages(problems, params, alphas, level_config, level_config.n_starts, level_reporter, race)
        accepted += _accept(tree, Xs, ys, nodes, rows, ids, result.best, errors, config, sw)
        if level_reporter.cancelled:
            reporter.cancelled = True
            break
    tree.meta.update(polish_seconds=now() - t0, polish_nodes_visited=visited,
                     polish_nodes_accepted=accepted, cancelled=reporter.cancelled or tree.meta.get("cancelled", False))
    return tree


def polished_levels(depth: int, budgeted: bool) -> range:
    """The levels a polish visits: every one (the paper's Algorithm 2), or with a time budget those below the root."""
    return range(1 if budgeted else 0, depth)


def level_seconds(left: float, depth: int, level: int) -> float:
    """This level's share of the ``left`` seconds that the levels from ``level`` down to the last one share, in
    proportion to the leaves under one of each level's subtrees (2 ** (depth - level))."""
    weights = [2.0 ** (depth - lower) for lower in range(level, depth)]
    return max(0.0, left) * weights[0] / sum(weights)


def _level_plan(problems: Problems, config: GETConfig, depth: int, gen: torch.Generator, fit: Budget | None,
                level: int, decisions: Plan, n_rows: int) -> tuple[GETConfig, Race | None]:
    """With the ``fit``'s budget, this level's race: its share (``level_seconds``) of the seconds left until the
    budget's end, from now (before the probes: their time comes out of the share), a class tree's planned to buy starts
    before epochs (``race.POLISH_EPOCHS_MORE_STARTS``), as many as memory allows beside the fit's ``n_rows`` rows
    (``memory.max_starts``); else ``config`` and no race."""
    if fit is None:
        return config, None
    share = Budget(level_seconds(fit.left(), config.depth, level))
    more_starts = POLISH_EPOCHS_MORE_STARTS if problems.classes else MIN_EPOCHS_MORE_STARTS
    B, n_max, p1 = problems.Xa.shape
    most = max_starts(n_rows, p1 - 1, config, problems.y.shape[2] if problems.classes else 0, (level, B * n_max))
    level_config, race_plan, costs = budgeted(problems, config, depth, share.seconds, gen, decisions, more_starts,
                                              most)
    return level_config, Race(race_plan, costs, share.end, share.seconds, 2, decisions)


def _accept(tree: ObliqueTree, Xs: np.ndarray, ys: np.ndarray, nodes: list[int], rows: list[np.ndarray],
            ids: np.ndarray, best: Params, errors: np.ndarray, config: GETConfig, sw: np.ndarray | None) -> int:
    """Write every polished subtree into ``tree``, then revert those that did not lower their rows' float64 loss
    (``Xs``: the rows scaled once)."""
    old_w, old_t = tree.weights[ids].copy(), tree.thresholds[ids].copy()
    tree.weights[ids] = best.weights.double().cpu().numpy()
    tree.thresholds[ids] = best.thresholds.double().cpu().numpy()
    leaves.refit_tree_leaves(tree, Xs, ys, config.linear_leaves, config.clip_leaves, sw, scaled=True)
    new_errors = leaves.row_losses(tree, Xs, ys, sw, scaled=True)
    worse = [b for b, r in enumerate(rows) if new_errors[r].sum() >= errors[r].sum()]
    if worse:
        tree.weights[ids[worse]], tree.thresholds[ids[worse]] = old_w[worse], old_t[worse]
        leaves.refit_tree_leaves(tree, Xs, ys, config.linear_leaves, config.clip_leaves, sw, scaled=True)
    return len(nodes) - len(worse)
