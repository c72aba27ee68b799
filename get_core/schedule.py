"""The alpha schedule's stage intervals: plain numpy, so the app's pages can show them without loading torch."""

from __future__ import annotations

import numpy as np

#: The paper's practice (appendix B) for its range [5, 150]: a first alpha from [5, 25], a second from [50, 150],
#: i.e. the first stage within [min, 5 min] and the last within [max / 3, max] of ``alpha_range``.
FIRST_STAGE_SPAN = 5.0
LAST_STAGE_SPAN = 3.0


def alpha_stage_bounds(alpha_range: tuple[float, float], n_alphas: int) -> np.ndarray:
    """(n_alphas, 2) the interval each stage's alpha is drawn from.

    Two stages reproduce the paper's [5, 25] and [50, 150]: a soft first stage to move the splits, then a stage
    sharp enough that the soft tree is close to its hard version (a second alpha as soft as ~27 left deep trees at
    their CART start). One stage uses the sharp interval alone; stages in between interpolate the two intervals'
    ends geometrically. Intervals are clipped to ``alpha_range``.
    """
    lo, hi = float(alpha_range[0]), float(alpha_range[1])
    first = np.array([lo, min(hi, FIRST_STAGE_SPAN * lo)])
    last = np.array([max(lo, hi / LAST_STAGE_SPAN), hi])
    if n_alphas == 1:
        return last[None, :]
    t = np.linspace(0.0, 1.0, n_alphas)[:, None]
    bounds = first[None, :] ** (1.0 - t) * last[None, :] ** t
    return np.clip(np.maximum.accumulate(bounds, axis=0), lo, hi)  # exact ends despite rounding


def stage_midpoints(alpha_range: tuple[float, float], n_alphas: int) -> list[float]:
    """One typical alpha per stage (the middle of its interval): what a run's schedule looks like before sampling."""
    return [float(a) for a in alpha_stage_bounds(alpha_range, n_alphas).mean(axis=1)]
