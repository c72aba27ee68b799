"""Time budgets and racing starts (``time_budget=seconds``): successive halving of GET's starts, as in Hyperband.

How a budgeted fit runs (``optimize.budgeted`` plans it, ``optimize.run_stages`` calls ``Race`` at its hard-loss
checkpoints):
1. A probe times a few soft epochs and one hard evaluation on this data (``optimize.probe_costs``).
2. ``plan`` picks the starts S (a power of two; the CART start among them) and the epochs per stage E, so that the
   race below costs about the seconds left: as many starts as the budget buys while each still gets
   ``MIN_EPOCHS_MORE_STARTS`` epochs per stage (a class tree's polish level: ``POLISH_EPOCHS_MORE_STARTS``), then
   more epochs up to ``MAX_EPOCHS`` (the paper's 3000).
3. The race: every start runs the same alpha schedule (the warm-started stages of ``run_stages``, cosine learning
   rate over E epochs per stage); at rungs spread geometrically over the whole schedule (equal cost per rung, the
   first after 1/(2^(K+1) - 1) of it) each problem keeps the better half of its surviving starts by their best hard
   training loss so far, down to ``FINAL_STARTS`` (or all of them, when the race runs far enough ahead of its
   plan and a later rung remains). A survivor's schedule is exactly that of an unraced start. The informed starts
   (the CART start, and a warm start when there is one) are never dropped, and not counted in the halving: they
   often trail the random starts early and lead at the end (delta_elevators, depth 4: the CART start alone reaches
   a training R2 of 65.7-66.1 at 1 x 3000; raced among 128 it was dropped and the fit ended at 65.4).
4. Pacing: at each rung the cost per start-epoch measured since the last one predicts the rest; when the plan would
   overrun the deadline (a loaded machine), more starts are dropped (one is always kept); when keeping them all
   would still meet it, none is, except at the last rung (``Race._keep``). A little past its deadline (``OVERRUN``)
   the fit stops as if cancelled, with the best tree so far, so that it ends within ``HARD_LIMIT`` times its budget;
   never later than its ``stop_by``, where the passes over every row that follow it need the rest of the budget.
The result is the best tree by hard training loss over every tree any start ever had at a checkpoint (dropped starts
included), so it is never worse than the CART start. The last ``budget.REFIT_SHARE`` of the time refits its nodes one at a
time (``node_refit``), which only ever lowers that loss; with the default polish (``config.polishes``) all this
takes the first ``budget.POLISH_SHARE`` of the budget and the subtree polish the rest. Why many short starts: GET gets stuck
in local optima; on planted data 40 starts x 1000 epochs beat 10 x 3000 (issue 21), and halving spends the epochs on
the starts that lead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from get_core.budget import STRETCH, now
from get_core.engine.plan import Plan

#: Start counts a plan may choose, fewest first.
LADDER = (4, 8, 16, 32, 64, 128)
#: A plan takes more starts only while each still gets this many epochs per stage.
MIN_EPOCHS_MORE_STARTS = 1000
#: The same for a budgeted polish's levels of a class tree (``polish``): a subtree whose top split has no gain of its
#: own until the splits under it are right (a parity) is found by a lucky start, not by more epochs. Planted depth-4
#: classes (``bench.studies.planted_classes``, 10 s counted in CPU seconds, seeds 0-2): with 1000 the level-1 polish
#: raced 4-8 starts and the fits ended at 71.9 / 65.8 / 71.0% test accuracy; with 300 it raced 128 and they reached
#: 71.5 / 88.8 / 88.9 (Bayes 90; docs/BENCHMARKS.md, the planted-classes paragraph). Regression trees keep 1000:
#: the app's default run (linear leaves, depth 5, 10 s; airfoil, puma8NH, gas_turbine_co, abalone, seeds 0-2, the
#: same hour) averaged 65.8 test R2 with 300, 67.9 with 1000.
POLISH_EPOCHS_MORE_STARTS = 300
#: Epochs per stage: at most the paper's, at least a few checkpoints' worth.
MAX_EPOCHS, MIN_EPOCHS = 3000, 20
#: Fewest hard-loss checkpoints per stage: a plan whose fewest starts and epochs overrun its seconds checks less often
#: (each checkpoint scores every row by every start: 0.155 s on 300,000 x 19 at depth 4, 40 of them in a minimal
#: race, so a 10-s fit ran to its hard limit).
MIN_CHECKPOINTS = 2
#: Starts per problem that run the schedule to its end.
FINAL_STARTS = 2
#: A fit ends within this multiple of its budget in wall seconds: its race stops with the best tree so far once its
#: clock (``budget.now``, at worst 1 / ``STRETCH`` of the wall clock) passes its deadline by ``OVERRUN - 1`` of its
#: seconds. Before the fit's clock left out a busy machine's waits the race stopped only at twice its budget past
#: its deadline, and what follows it (leaf refits and scores on every row) took 750,000 x 19 with ``time_budget=20``
#: to 42 s (issue 34).
HARD_LIMIT = 2.0
OVERRUN = HARD_LIMIT / STRETCH


@dataclass(frozen=True)
class Costs:
    """What the probe measured: seconds per epoch and per hard-loss checkpoint at a few start counts (per problem),
    ``(starts, seconds)`` ascending. Between them the cost is interpolated, beyond the largest it grows in proportion.
    Why several points: per start, an epoch of 128 starts measured 3x one of 8 (caches) and a checkpoint 10x, while
    one start costs more than 1/8 of eight (calls, optimizer steps)."""

    epoch: tuple[tuple[int, float], ...]
    evaluation: tuple[tuple[int, float], ...]

    def seconds(self, epochs: float, checkpoints: float, starts: float) -> float:
        """``epochs`` epochs with ``checkpoints`` checkpoints of ``starts`` starts."""
        return epochs * _interpolated(self.epoch, starts) + checkpoints * _interpolated(self.evaluation, starts)

    def merged(self, other: "Costs") -> "Costs":
        return Costs(_union(self.epoch, other.epoch), _union(self.evaluation, other.evaluation))


def _union(a: tuple[tuple[int, float], ...], b: tuple[tuple[int, float], ...]) -> tuple[tuple[int, float], ...]:
    """Both sets of points, ascending, each at least the one before (more starts never cost less)."""
    points, top = [], 0.0
    for starts, seconds in sorted({**dict(a), **dict(b)}.items()):
        top = max(top, seconds)
        points.append((starts, top))
    return tuple(points)


def _interpolated(points: tuple[tuple[int, float], ...], starts: float) -> float:
    if starts <= points[0][0]:
        return points[0][1]
    for (s0, t0), (s1, t1) in zip(points, points[1:]):
        if starts <= s1:
            return t0 + (t1 - t0) * (starts - s0) / (s1 - s0)
    s_last, t_last = points[-1]
    return t_last * starts / s_last


@dataclass(frozen=True)
class RacePlan:
    n_starts: int
    n_epochs: int
    n_stages: int
    checkpoints_per_stage: int

    @property
    def halvings(self) -> int:
        return max(0, int(math.log2(max(1, self.n_starts // FINAL_STARTS))))

    @property
    def total(self) -> int:
        """Epochs over all stages."""
        return self.n_stages * self.n_epochs

    def rungs(self) -> list[float]:
        """Where the halvings fall, in epochs over all stages: equal start-epochs between rungs."""
        k = self.halvings
        return [self.total * (2 ** (i + 1) - 1) / (2 ** (k + 1) - 1) for i in range(k)]

    def seconds(self, costs: Costs, starts: int | None = None, position: float = 0.0) -> float:
        """The race's predicted cost from ``position`` on, with ``starts`` alive there (default: all, at 0) and
        halved at each later rung."""
        starts = self.n_starts if starts is None else starts
        bounds = [position, *(r for r in self.rungs() if r > position), self.total]
        per_epoch = self.checkpoints_per_stage / self.n_epochs
        return sum(costs.seconds(end - begin, (end - begin) * per_epoch, max(1, starts >> i))
                   for i, (begin, end) in enumerate(zip(bounds, bounds[1:])))


def plan(seconds: float, costs: Costs, n_stages: int, checkpoints_per_stage: int,
         epochs_more_starts: int = MIN_EPOCHS_MORE_STARTS, most_starts: int | None = None) -> RacePlan:
    """The race that fits in ``seconds``: the most starts of ``LADDER`` (up to ``most_starts``, what memory allows)
    that still get ``epochs_more_starts`` epochs per stage (else the fewest), with as many epochs as fit, within
    [MIN_EPOCHS, MAX_EPOCHS]; where even the fewest starts' ``MIN_EPOCHS`` overrun, fewer checkpoints per stage
    (down to ``MIN_CHECKPOINTS``)."""
    def epochs_for(starts: int, checkpoints: int = checkpoints_per_stage) -> int:
        fixed = RacePlan(starts, 1, n_stages, checkpoints).seconds(replace(costs, epoch=((1, 0.0),)))
        per_epoch = RacePlan(starts, 1, n_stages, 0).seconds(costs)
        return int(max(0.0, seconds - fixed) / max(per_epoch, 1e-12))

    starts = next((s for s in reversed(LADDER) if (most_starts is None or s <= most_starts)
                   and epochs_for(s) >= epochs_more_starts), LADDER[0])
    checkpoints = next((c for c in range(checkpoints_per_stage, MIN_CHECKPOINTS, -1)
                        if epochs_for(starts, c) >= MIN_EPOCHS), MIN_CHECKPOINTS)
    epochs = min(MAX_EPOCHS, max(MIN_EPOCHS, epochs_for(starts, checkpoints)))
    return RacePlan(starts, epochs, n_stages, checkpoints)


class Race:
    """The halving and pacing of one ``run_stages`` call (see the module docstring); positions are epochs counted
    over all stages. ``ids`` are the surviving starts' original numbers (what progress reports as ``start``). Its
    clock-dependent decisions (how many starts a rung keeps, where it is out of time) go through ``decisions``
    (``plan``: recorded, or replayed without the clock; then ``costs`` may be None). ``stop_by``: a time on the fit's
    clock past which it stops even within its ``OVERRUN`` (None: none)."""

    def __init__(self, race_plan: RacePlan, costs: Costs | None, deadline: float, budget: float, protected: int = 1,
                 decisions: Plan | None = None, stop_by: float | None = None):
        self.plan, self.costs, self.deadline, self.budget = race_plan, costs, deadline, budget
        self.stop_by = math.inf if stop_by is None else stop_by
        self.protected = protected
        self.decisions = Plan() if decisions is None else decisions
        self.rungs = race_plan.rungs()
        self.ids = torch.arange(race_plan.n_starts)
        self.n_starts = race_plan.n_starts
        self._last = (now(), 0.0)  # (clock, position) of the last rung or the start

    def start(self) -> None:
        """The race's epochs begin now: the first rung's pace counts from here, not from the CART start's fit."""
        self._last = (now(), 0.0)

    def out_of_time(self, position: int) -> bool:
        """Whether the race stops at ``position`` (epochs over all stages): past ``OVERRUN`` times its budget."""
        return self.decisions.stops("stop", position, self.past_limit)

    def past_limit(self) -> bool:
        """The fit's clock (``budget.now``) is past ``OVERRUN`` times the budget, or past ``stop_by``."""
        return now() > min(self.deadline + (OVERRUN - 1.0) * self.budget, self.stop_by)

    def survivors(self, position: int, losses: torch.Tensor, starts: int) -> torch.Tensor | None:
        """At a checkpoint: the models to keep (indices into the M = B x ``starts`` current ones: each problem's
        ``protected`` first starts and the best ``keep`` of the others by ``losses``, in their original order), or
        None when no rung is due or nothing is dropped."""
        if not self.rungs or position < self.rungs[0]:
            return None
        while self.rungs and position >= self.rungs[0]:
            self.rungs.pop(0)
        informed = int((self.ids < self.protected).sum())  # protected starts alive: each problem's first columns
        droppable = starts - informed
        keep = informed + self.decisions.answer("keep", lambda: self._keep(position, starts, informed),
                                                lambda k: _is_count(k) and k <= max(1, droppable))
        if keep >= starts:
            return None
        ranked = losses.view(-1, starts)[:, informed:].argsort(dim=1, stable=True) + informed
        first = torch.arange(informed, device=ranked.device).expand(ranked.shape[0], informed)
        order = torch.cat([first, ranked[:, :keep - informed].sort(dim=1).values], dim=1)
        self.ids = self.ids[order[0].cpu()]
        return (order + torch.arange(order.shape[0], device=order.device).view(-1, 1) * starts).flatten()

    def _keep(self, position: int, starts: int, informed: int) -> int:
        """How many of the ``starts - informed`` unprotected starts to keep: half; fewer when the rest of the race,
        at the pace measured since the last rung, would overrun the deadline; all of them when even that fits and a
        later rung can still correct the bet. Keeping all is how a race that runs ahead of its plan spends the time:
        a probe that under-estimates many starts' cost makes the first rung drop too many (abalone, depth 8, 60 s:
        128 -> 16 starts, then the race ended at 49 s). Never at the last rung: it falls at the last stage's start,
        whose epochs can cost several times the ones just measured, once the splits soften again (planted depth 3,
        10 s: the last rung kept 8 starts, the second stage ran 5x slower per start-epoch, the fit took 13 s)."""
        at = now()
        clock, last = self._last
        self._last = (at, float(position))
        span = position - last
        predicted = self.costs.seconds(span, span * self.plan.checkpoints_per_stage / self.plan.n_epochs, starts)
        slowdown = (at - clock) / max(predicted, 1e-9)

        def fits(keep: int) -> bool:
            return at + slowdown * self.plan.seconds(self.costs, keep + informed, position) <= self.deadline

        if self.rungs and fits(starts - informed):
            return starts - informed
        keep = max(1, (starts - informed) // 2)
        while keep > 1 and not fits(keep):
            keep //= 2
        return keep


def _is_count(value: object) -> bool:
    """A whole number of starts, at least one (what a replayed plan may answer)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
