"""The capture-size advisor: the list with least padding that fits a memory budget.

Pure and torch-free. Given a real distribution (contract/capture_dist.py), an
engine's rules and a curve (contract/capture_sizes.py), it proposes a capture list and
prices it beside the engine's default list on the same distribution.

How the list is chosen:
1. The largest size covers the requested share of batches (`cover`, default all of them),
   rounded up to a size the engine accepts. If one graph of that size does not fit the
   budget, the largest size that fits is taken instead (and said).
2. Under a shared pool the budget then bounds the number of graphs: each further size adds
   `curve.per_graph_bytes`.
3. For each number of graphs k, the list with the fewest padded rows is exact: a dynamic
   programme over candidate sizes (a batch's padding depends only on the next captured
   size above it, and an optimal list only ever holds sizes that batches round up to, plus
   the largest), with divide-and-conquer over the monotone split point (the padding cost
   of an interval satisfies the quadrangle inequality, as 1-D clustering costs do);
   tests/contract/test_capture_sizes.py checks it against brute force.
4. Among the k that fit, the fewest graphs whose padding waste is within `tolerance`
   (default one percentage point) of the best: each graph costs capture time.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass

from contract.capture_dist import BatchCounts
from contract.capture_sizes import (
    MAX_GRAPHS,
    MIB,
    AdviceError,
    Curve,
    EngineRules,
    Priced,
    config_lines,
    price,
)

TOLERANCE = 0.01


@dataclass(frozen=True)
class Advice:
    engine: str
    proposed: Priced
    default: Priced  # the engine's own list (torch: every distinct size seen)
    default_label: str
    budget_bytes: int
    by_graphs: tuple[Priced, ...]  # the least-padding list for each number of graphs
    config: tuple[str, ...]
    notes: tuple[str, ...]
    unit: str


class _Costs:
    """Padding rows of the batches in (lo, hi] when all are padded up to hi: O(log n)."""

    def __init__(self, counts: Mapping[int, float]):
        self.xs = sorted(counts)
        self.c, self.s = [0.0], [0.0]
        for x in self.xs:
            self.c.append(self.c[-1] + counts[x])
            self.s.append(self.s[-1] + counts[x] * x)

    def interval(self, lo: int, hi: int) -> float:
        a = bisect.bisect_right(self.xs, lo)
        b = bisect.bisect_right(self.xs, hi)
        return hi * (self.c[b] - self.c[a]) - (self.s[b] - self.s[a])


def least_padding(counts: Mapping[int, float], cands: list[int], kmax: int
                  ) -> dict[int, tuple[float, tuple[int, ...]]]:
    """For k = 1..kmax: (padded rows, list) with the fewest padded rows over batches up to
    cands[-1], choosing k sizes from `cands` (ascending) with cands[-1] always chosen."""
    n = len(cands)
    cost = _Costs({x: c for x, c in counts.items() if x <= cands[-1]})
    prev = [cost.interval(0, cands[j]) for j in range(n)]  # k = 1: cands[j] alone
    parents: list[list[int]] = [[-1] * n]
    out: dict[int, tuple[float, tuple[int, ...]]] = {1: (prev[-1], (cands[-1],))}

    for k in range(2, min(kmax, n) + 1):
        cur, par = _layer(prev, cost, cands, k)
        parents.append(par)
        sizes, j = [], n - 1
        for layer in range(k - 1, -1, -1):
            sizes.append(cands[j])
            j = parents[layer][j]
        out[k] = (cur[-1], tuple(reversed(sizes)))
        prev = cur
        if cur[-1] <= 0:
            break  # no padding left: more graphs cannot help
    return out


def _layer(prev: list[float], cost: _Costs, cands: list[int], k: int
           ) -> tuple[list[float], list[int]]:
    """One more size: cur[j] = min over i < j of prev[i] + padding of (cands[i], cands[j]],
    by divide and conquer on the split point, which moves right as j does."""
    n, inf = len(cands), float("inf")
    cur, par = [inf] * n, [-1] * n
    stack = [(k - 1, n - 1, k - 2, n - 2)]
    while stack:
        lo, hi, olo, ohi = stack.pop()
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        best, arg = inf, -1
        for i in range(olo, min(mid - 1, ohi) + 1):
            if prev[i] == inf:
                continue
            v = prev[i] + cost.interval(cands[i], cands[mid])
            if v < best:
                best, arg = v, i
        cur[mid], par[mid] = best, arg
        stack.append((lo, mid - 1, olo, arg if arg >= 0 else ohi))
        stack.append((mid + 1, hi, arg if arg >= 0 else olo, ohi))
    return cur, par


def _candidates(counts: Mapping[int, float], rules: EngineRules, top: int) -> list[int]:
    cs = {rules.round_up(x) for x in counts}
    return sorted({c for c in cs if c <= top} | {top})


def _largest_size(dist: BatchCounts, rules: EngineRules, curve: Curve, budget_bytes: int,
                  cover: float, shared: bool, notes: list[str]) -> int:
    """The largest size to capture: the distribution's `cover` quantile, rounded as the
    engine rounds, capped by vLLM's token limit and by what one graph may cost; what
    moved it is noted."""
    smallest = rules.round_up(1)
    top = rules.round_up(dist.quantile(cover))
    if rules.engine == "vllm" and rules.max_num_batched_tokens is not None \
            and top > rules.max_num_batched_tokens:
        top = rules.max_num_batched_tokens - rules.max_num_batched_tokens % rules.multiple_of
        if top < smallest:
            raise AdviceError(f"max_num_batched_tokens {rules.max_num_batched_tokens} is "
                              f"below the smallest size the rules allow ({smallest})")
        notes.append(f"largest size capped at max_num_batched_tokens ({top})")
    if curve.pool_bytes([top], shared) > budget_bytes:
        fit = int((budget_bytes - curve.fixed_bytes) / curve.per_row_bytes) \
            if curve.per_row_bytes > 0 else top
        fit = max(smallest, fit - fit % rules.multiple_of)
        notes.append(f"one graph of size {top} needs more than the budget: the largest "
                     f"size is {fit}, batches above it run without graphs")
        top = fit
    return top


def _graph_limit(curve: Curve, budget_bytes: int, top: int, max_graphs: int,
                 shared: bool) -> int:
    """How many graphs the budget can hold beside the largest one."""
    if shared and curve.per_graph_bytes > 0:
        room = budget_bytes - curve.pool_bytes([top], shared)
        kmax = 1 + int(room // curve.per_graph_bytes)
    else:
        kmax = max_graphs
    if not shared:  # private pools: every graph pays the fixed part; bound k by that
        kmax = min(kmax, max(1, int(budget_bytes // max(curve.fixed_bytes, 1))))
    return max(1, min(kmax, max_graphs))


def _default_list(dist: BatchCounts, rules: EngineRules) -> tuple[tuple[int, ...], str]:
    """The engine's own list of sizes the advice is set against, and its label."""
    default_sizes = rules.default_sizes()
    if rules.engine == "torch":
        return tuple(sorted(dist.counts)), ("torch.compile default (None: every size seen "
                                            "is captured)")
    label = (f"{rules.engine} default (largest {rules.default_max()})"
             if default_sizes else f"{rules.engine} default")
    # Compared within the range the distribution covers (issue 37: a log up to 128
    # against a default list up to 512 priced 384 rows of activations no batch used):
    # the default's sizes up to the first that holds the largest batch seen.
    seen = max(dist.counts) if dist.counts else 0
    cut = next((i for i, x in enumerate(default_sizes) if x >= seen), None)
    if cut is not None and cut + 1 < len(default_sizes):
        label = (f"{rules.engine} default within the distribution's range: "
                 f"{cut + 1} of its {len(default_sizes)} sizes, up to "
                 f"{default_sizes[cut]} (the largest batch seen is {seen}; the full "
                 f"list goes to {default_sizes[-1]})")
        default_sizes = default_sizes[:cut + 1]
    return default_sizes, label


def advise(dist: BatchCounts, rules: EngineRules, curve: Curve, budget_bytes: int, *,
           cover: float = 1.0, max_graphs: int = MAX_GRAPHS, tolerance: float = TOLERANCE,
           shared: bool = True) -> Advice:
    if not 0 < cover <= 1:
        raise AdviceError(f"cover {cover} must be above 0 and at most 1")
    if not 1 <= max_graphs <= MAX_GRAPHS:
        raise AdviceError(f"max graphs {max_graphs} is out of range (1 to {MAX_GRAPHS})")
    notes = list(dist.notes)
    smallest = rules.round_up(1)
    one = curve.pool_bytes([smallest], shared)
    if budget_bytes < one:
        raise AdviceError(f"budget {budget_bytes / MIB:.1f} MiB is below one graph "
                          f"({one / MIB:.1f} MiB for size {smallest} by the curve: "
                          f"{curve.source})")
    top = _largest_size(dist, rules, curve, budget_bytes, cover, shared, notes)
    kmax = _graph_limit(curve, budget_bytes, top, max_graphs, shared)
    cands = _candidates(dist.counts, rules, top)
    best = least_padding(dist.counts, cands, kmax)
    priced = []
    for _k, (_rows, sizes) in sorted(best.items()):
        p = price(dist, sizes, curve, shared)
        if p.pool_bytes <= budget_bytes:
            priced.append(p)
    if not priced:
        raise AdviceError(f"no list fits {budget_bytes / MIB:.1f} MiB by the curve")
    floor = min(p.padding_waste for p in priced)
    chosen = next(p for p in priced if p.padding_waste <= floor + tolerance)
    default_sizes, label = _default_list(dist, rules)
    default = price(dist, default_sizes, curve, shared)
    if rules.engine == "sglang":  # server_args.py: reserved_mem += cuda_graph_max_bs * 2 (MB)
        notes.append(f"SGLang reserves {2 * chosen.sizes[-1]} MB for graphs by its rule of "
                     f"thumb (2 MB x largest size) against {2 * default_sizes[-1]} MB for "
                     "its default; above 60 GB of GPU memory its 10 GB floor for "
                     "activations and graphs usually decides")
    if rules.engine == "torch":
        notes.append("torch.compile pads nothing: pad each batch up to the next size, or "
                     "sizes not in the list run without graphs")
    if default.pool_bytes > budget_bytes:
        notes.append(f"the default list needs {default.pool_mib:.1f} MiB, above the budget")
    return Advice(rules.engine, chosen, default, label, budget_bytes, tuple(priced),
                  tuple(config_lines(rules.engine, chosen.sizes)), tuple(notes), dist.unit)


def brute_force(counts: Mapping[int, float], cands: list[int], k: int
                ) -> tuple[float, tuple[int, ...]]:
    """The exact answer by enumeration (tests only; exponential)."""
    from itertools import combinations

    cost = _Costs({x: c for x, c in counts.items() if x <= cands[-1]})
    best: tuple[float, tuple[int, ...]] = (float("inf"), ())
    for rest in combinations(cands[:-1], k - 1):
        sizes = (*rest, cands[-1])
        rows, lo = 0.0, 0
        for s in sizes:
            rows, lo = rows + cost.interval(lo, s), s
        if rows < best[0] - 1e-9:
            best = (rows, sizes)
    return best
