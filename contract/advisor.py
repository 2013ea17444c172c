"""The bucket advisor: which bucket sizes to capture, given what each costs.

Pure and torch-free (the dashboard's memory-budget slider calls it on every move).

Inputs are measured per candidate size (a serve run's "profile"): the time to serve one
request through that size's bucket (graph replay on CUDA), eager time at that size (what
a request above the largest bucket pays), the graph pool a capture of that size takes
alone, and what it adds when captured after larger ones into one shared pool (serving
engines capture largest first so smaller graphs reuse the big one's memory). The model:

    time per request = sum over sizes x of p(x) * (bucket_ms(bucket(x)) or eager_ms(x))
    pool bytes       = pool_bytes(largest bucket) + sum of pool_extra_bytes(the others)

Throughput (rows/s) is mean rows / time per request, so maximising it is minimising the
expected time. Exact search over subsets is a dynamic programme over sorted candidates
(a request's cost depends only on the next chosen size above it), keeping per (last
chosen size, number of graphs) the Pareto front of (time so far, extra bytes so far).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from contract.buckets import choose_bucket, pow2_buckets

MAX_GRAPHS = 16  # serving engines capture tens of sizes at most; also bounds the search
FRONT_CAP = 12  # Pareto states kept per (size, graphs): enough, measured on 64 candidates
# Plans closer than this in expected time are ties: the profile's medians scatter by about
# 5% between neighbouring sizes of one regime (H200: 0.309-0.346 ms for 32..256 rows of
# the launch-bound mlp). Among ties the least graph memory wins, then the least padding,
# then the fewest graphs: memory is the cost a budget bounds, padding is compute thrown
# away on every padded request, and one more graph costs only its capture at start-up.
# So where every tied plan keeps the same pool (the H200 mlp: 34 MiB from one graph to
# sixteen), padding decides; where memory is unknown (CPU), fewest graphs, then padding.
TOLERANCE = 0.05


@dataclass(frozen=True)
class ProfilePoint:
    batch_size: int
    bucket_ms: float | None  # serve one request through this size's bucket
    eager_ms: float | None
    pool_bytes: int | None = None  # this size's graph pool, captured alone
    pool_extra_bytes: int | None = None  # added after larger ones in a shared pool


@dataclass(frozen=True)
class Plan:
    buckets: tuple[int, ...]
    expected_ms: float  # per request
    requests_per_s: float
    rows_per_s: float
    pool_bytes: int | None  # model estimate; None when memory is unknown (CPU)
    padding_waste: float  # padded rows / real rows - 1
    fallback_rate: float


@dataclass(frozen=True)
class Advice:
    recommended: Plan  # the tie-break of TOLERANCE among plans within it of the best
    best: Plan  # highest throughput within the budget
    by_graphs: tuple[Plan, ...]  # the best plan for each number of graphs (0 = all eager)
    pow2: Plan | None  # best power-of-two prefix (1, 2, 4, ...) within the budget
    memory_known: bool
    fewest_graphs: Plan  # the tied plan with the fewest graphs (then least padding)
    memory_flat: bool  # memory known and the same for every tied plan: padding decided


class Model:
    """A distribution of batch sizes and a profile, precomputed for fast evaluation."""

    def __init__(self, pmf: Mapping[int, float], profile: Sequence[ProfilePoint]):
        if not pmf:
            raise ValueError("advisor: empty batch-size distribution")
        total = sum(pmf.values())
        self.xs = sorted(pmf)
        self.p = [pmf[x] / total for x in self.xs]
        eager = sorted((pt.batch_size, pt.eager_ms) for pt in profile if pt.eager_ms is not None)
        if not eager:
            raise ValueError("advisor: no eager time in the profile")
        self._eager_x, self._eager_ms = [e[0] for e in eager], [e[1] for e in eager]
        self.points = {pt.batch_size: pt for pt in profile if pt.bucket_ms is not None}
        # What the search may choose: nothing above the smallest size that holds the
        # largest request; a bigger bucket serves the same requests with more padding.
        cover = min((c for c in self.points if c >= self.xs[-1]), default=None)
        self.candidates = sorted(c for c in self.points if cover is None or c <= cover)
        # Taken as measured, even where a bigger size is faster than a smaller one: that
        # is real (on the H200, torch 2.11, cuBLAS ran 17..31 rows of the mlp in 0.6 ms
        # and 32..256 rows in 0.31-0.35 ms), and padding past such a size is a gain.
        self.bucket_ms = {c: p.bucket_ms for c, p in self.points.items()
                          if p.bucket_ms is not None}  # all: points hold those only
        self.memory_known = bool(self.points) and all(
            pt.pool_bytes is not None and pt.pool_extra_bytes is not None
            for pt in self.points.values())
        self.mean_rows = sum(x * p for x, p in zip(self.xs, self.p, strict=True))
        # Prefix sums over xs: probability mass and eager time, for O(log n) range sums.
        self._mass, self._etime = [0.0], [0.0]
        for x, p in zip(self.xs, self.p, strict=True):
            self._mass.append(self._mass[-1] + p)
            self._etime.append(self._etime[-1] + p * self.eager_ms(x))

    def eager_ms(self, x: int) -> float:
        """Measured eager time, linearly interpolated (and extrapolated) between sizes."""
        xs, ys = self._eager_x, self._eager_ms
        i = bisect.bisect_left(xs, x)
        if i < len(xs) and xs[i] == x:
            return ys[i]
        if len(xs) == 1:
            return ys[0]
        i = min(max(i, 1), len(xs) - 1)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        return max(0.0, y0 + (y1 - y0) * (x - x0) / (x1 - x0))

    def mass(self, lo: int | None, hi: int) -> float:
        """Probability of lo < x <= hi (lo None: from the smallest)."""
        a = 0 if lo is None else bisect.bisect_right(self.xs, lo)
        return self._mass[bisect.bisect_right(self.xs, hi)] - self._mass[a]

    def tail_ms(self, top: int | None) -> float:
        """Expected eager time of the requests above `top` (all of them when None)."""
        a = 0 if top is None else bisect.bisect_right(self.xs, top)
        return self._etime[-1] - self._etime[a]

    def pool(self, buckets: Sequence[int]) -> int | None:
        if not buckets:
            return 0
        if not self.memory_known:
            return None
        # memory_known: every point's pool figures were measured
        top = self.points[buckets[-1]].pool_bytes or 0
        return top + sum(self.points[b].pool_extra_bytes or 0 for b in buckets[:-1])

    def plan(self, buckets: Sequence[int]) -> Plan:
        bs = tuple(sorted(buckets))
        missing = [b for b in bs if b not in self.points]
        if missing:
            raise ValueError(f"advisor: bucket {missing[0]} was not measured")
        t, prev = 0.0, None
        for b in bs:
            t += self.mass(prev, b) * self.bucket_ms[b]
            prev = b
        t += self.tail_ms(prev)
        executed = sum(p * (choose_bucket(x, bs) or x)
                       for x, p in zip(self.xs, self.p, strict=True))
        fallback = self.mass(prev, self.xs[-1]) if bs else 1.0
        per_s = 1000.0 / t if t > 0 else float("inf")
        return Plan(bs, t, per_s, per_s * self.mean_rows, self.pool(bs),
                    executed / self.mean_rows - 1, fallback)


State = tuple[float, int, tuple[int, ...]]  # (time, extra bytes, buckets)


def _prune(states: list[State]) -> list[State]:
    """Keep the Pareto front of (time, extra bytes): lower is better in both."""
    states.sort(key=lambda s: (s[0], s[1]))
    front: list[State] = []
    best_inc: int | None = None
    for s in states:
        if best_inc is None or s[1] < best_inc:
            front.append(s)
            best_inc = s[1]
    if len(front) > FRONT_CAP:  # thin evenly, keeping both ends
        step = (len(front) - 1) / (FRONT_CAP - 1)
        front = [front[round(i * step)] for i in range(FRONT_CAP)]
    return front


def advise(pmf: Mapping[int, float], profile: Sequence[ProfilePoint],
           budget_bytes: int | None = None, max_graphs: int = MAX_GRAPHS,
           tolerance: float = TOLERANCE) -> Advice:
    """The bucket set that maximises throughput within `budget_bytes` of graph pools.

    The budget applies only where pool sizes were measured (CUDA); on CPU memory is
    unknown and only time decides."""
    m = Model(pmf, profile)
    budget = budget_bytes if m.memory_known else None
    cs = m.candidates
    extra = {c: (m.points[c].pool_extra_bytes or 0) if m.memory_known else 0 for c in cs}
    # fronts[j][k]: states whose largest bucket so far is cs[j], with k graphs.
    fronts: list[dict[int, list[State]]] = [dict() for _ in cs]
    for j, c in enumerate(cs):
        t_c = m.bucket_ms[c]
        new: dict[int, list[State]] = {1: [(m.mass(None, c) * t_c, 0, (c,))]}
        for i in range(j):
            w = m.mass(cs[i], c) * t_c
            for k, states in fronts[i].items():
                if k >= max_graphs:
                    continue
                for t, inc, bs in states:
                    ninc = inc + extra[cs[i]]
                    if budget is not None and ninc > budget:
                        continue
                    new.setdefault(k + 1, []).append((t + w, ninc, bs + (c,)))
        fronts[j] = {k: _prune(v) for k, v in new.items()}
    finals: list[tuple[float, tuple[int, ...]]] = [(m.tail_ms(None), ())]
    for j, c in enumerate(cs):
        top = m.points[c].pool_bytes or 0
        for states in fronts[j].values():
            finals += [(t + m.tail_ms(c), bs) for t, inc, bs in states
                       if budget is None or top + inc <= budget]
    best_by_k: dict[int, tuple[float, tuple[int, ...]]] = {}
    for total, bs in finals:
        if len(bs) not in best_by_k or total < best_by_k[len(bs)][0]:
            best_by_k[len(bs)] = (total, bs)
    by_graphs = tuple(m.plan(bs) for _k, (_t, bs) in sorted(best_by_k.items()))
    best = min(by_graphs, key=lambda p: p.expected_ms)
    ties = [m.plan(bs) for total, bs in finals if total <= best.expected_ms * (1 + tolerance)]
    fewest = min(ties, key=lambda p: (len(p.buckets), p.padding_waste, p.expected_ms))
    if not m.memory_known:
        return Advice(fewest, best, by_graphs, pow2_plan(m, budget), False, fewest, False)
    recommended = min(ties, key=lambda p: (p.pool_bytes, p.padding_waste, len(p.buckets),
                                           p.expected_ms))
    flat = len({p.pool_bytes for p in ties}) == 1
    return Advice(recommended, best, by_graphs, pow2_plan(m, budget), True, fewest, flat)


def pow2_plan(m: Model, budget: int | None) -> Plan | None:
    """The best 1, 2, 4, ... prefix that was measured and fits the budget."""
    plans = []
    full = pow2_buckets(m.xs[-1])
    for n in range(1, len(full) + 1):
        bs = full[:n]
        if not all(b in m.points for b in bs):
            break
        plan = m.plan(bs)
        if budget is None or (plan.pool_bytes or 0) <= budget:
            plans.append(plan)
    return min(plans, key=lambda p: p.expected_ms) if plans else None


def profile_sizes(stream: Sequence[int], bucket_sets: Sequence[Sequence[int]],
                  max_stream_sizes: int = 32) -> list[int]:
    """Candidate sizes a serve run profiles: every bucket of its strategies, the powers of
    two covering the stream, and the stream's distinct sizes (thinned evenly to
    `max_stream_sizes`, always keeping the smallest and largest, so that eager time is
    measured at both ends and interpolated between)."""
    distinct = sorted(set(stream))
    if len(distinct) > max_stream_sizes:
        step = (len(distinct) - 1) / (max_stream_sizes - 1)
        distinct = sorted({distinct[round(i * step)] for i in range(max_stream_sizes)})
    sizes = set(distinct) | set(pow2_buckets(max(stream)))
    for bs in bucket_sets:
        sizes |= set(bs)
    return sorted(sizes)
