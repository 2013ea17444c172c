"""What a run says in words: its title, its summary built from its points, and the headline
sentences (best speedup per mode with its interval, break-even, payback, launch cost,
energy) the Run page and the HTML report open with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from contract import speedups as sp
from contract import verdict as vd
from contract.measurement import Measurement
from contract.noise import launch_cost
from contract.numbers import number_or_none
from contract.run_summary import BREAK_EVEN_LABEL, RunHeader, RunSummary, summarize
from pages.logic import energy
from pages.logic.metrics import NO_INTERVAL, format_interval, format_value
from pages.logic.names import device_name, known

PUBLISHED_NOTE = ("Published figures, transcribed from the cited article: not measured by "
                  "launchbench; figures the article does not give are empty.")


def run_title(header: RunHeader, shown: Callable[[str], str] = str,
              torch: bool = True) -> str:
    """The run's title from its summary's header. `shown` turns each stored text into
    what the target shows (pages.logic.plain's plain() for a Markdown element; the HTML
    report escapes by itself). `torch=False`: without the torch version (the Run page
    says it on the line below, so that the title fits one line at 1280 px)."""
    gpu = shown(device_name(header))
    version = f", {torch_text(header, shown)}" if torch else ""
    mark = " [published]" if header.source == "published" else ""
    return f"Run {header.id}: {shown(header.workload)} on {gpu}{version}{mark}"


NOT_RECORDED = "not recorded"


def torch_text(header: RunHeader, shown: Callable[[str], str] = str) -> str:
    """'torch 2.11.0+cu130', or 'torch not recorded' (a dash beside the word read as a
    figure lost; a published run may not name one: the V100 blog ran no PyTorch)."""
    version = known(header.torch_version)
    return f"torch {shown(version)}" if version else f"torch {NOT_RECORDED}"


# The environment's fields as the Environment view names them, in the bundle's order.
ENVIRONMENT_LABELS = {
    "device": "Device", "gpu_name": "GPU", "gpu_count": "GPU count", "sm_count": "SMs",
    "gpu_memory_bytes": "GPU memory", "driver_version": "Driver", "cuda_version": "CUDA",
    "torch_version": "torch", "triton_version": "Triton", "python_version": "Python",
    "hostname": "Host", "cpu_model": "CPU"}
BYTES_PER_GIB = 1024 ** 3


def environment_text(field: str, value: object) -> str | None:
    """An environment field's value as a reader reads it (the Environment view, Compare's
    environment table, the report): GPU memory in GiB (150109880320 said nothing); None
    when unknown."""
    text = known(value)
    if field == "gpu_memory_bytes" and text is not None and text.isdigit():
        return f"{int(text) / BYTES_PER_GIB:,.1f} GiB"
    return text


def environment_rows(header: RunHeader) -> list[dict[str, str]]:
    """The run's environment as the Environment view's rows, each value as a reader reads
    it (environment_text), an unknown field 'not recorded'."""
    rows = []
    for field, value in header.environment().to_json().items():
        text = environment_text(field, value)
        rows.append({"field": ENVIRONMENT_LABELS.get(field, field),
                     "value": text if text is not None else NOT_RECORDED})
    return rows


def summary_of(header: RunHeader, points: Iterable[Measurement]) -> RunSummary:
    """The summary of a run held as a header and its points, built by the one builder
    the database's reads call (contract/run_summary.py)."""
    return summarize(header, points)


def duration_text(seconds: float) -> str:
    """A setup time as read at a glance: ms below a second ('3.2 ms', '850 ms'), else
    seconds ('12.4 s'): '0.00 s' said nothing about a 3 ms capture."""
    if seconds < 0.01:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1e3:.0f} ms"
    return f"{seconds:,.1f} s"


def batch_span(chosen: Sequence[int], measured: Iterable[int]) -> str:
    """Batch sizes in words: 'batches 4-16' when they are neighbours among the measured
    ones, else 'batches 4, 64'. No thousands separators: 'batches 1, 1,024, 4,096' read
    as five numbers."""
    order = sorted({int(b) for b in measured} | set(chosen))
    idx = [order.index(b) for b in sorted(chosen)]
    if len(chosen) == 1:
        return f"batch {chosen[0]}"
    if idx == list(range(idx[0], idx[0] + len(idx))):
        return f"batches {order[idx[0]]}-{order[idx[-1]]}"
    return "batches " + ", ".join(str(b) for b in sorted(chosen))


MEDIAN, MEAN = "median", "mean"


def step_statistic(points: Iterable[Measurement]) -> str:
    """The statistic of the run's step times: 'median' (what launchbench measures), or
    'mean' where every ok point that names its statistic names a mean (the published L40S
    article's CUDA-event means): a chart or sentence labels the figures it shows."""
    said = {str(m.source.statistic).strip().lower().split(" ")[0] for m in points
            if m.status == "ok" and m.source.statistic}
    return MEAN if said == {MEAN} else MEDIAN


def _ties(b: sp.ModeBest, found: Sequence[sp.Speedup]) -> list[int]:
    """The other batch sizes within noise of the best, quoted beside it: those of the same
    verdict only. A point whose own interval holds 1x is no speedup, so it is never named
    beside an "up to" figure (run 13 of the samples: compile at batch 1, 0.99-1.14x)."""
    verdicts = {x.batch_size: x.verdict for x in found}
    return [t for t in b.ties if t != b.batch_size and verdicts.get(t) == b.verdict]


def _best_line(b: sp.ModeBest, found: Sequence[sp.Speedup], stat: str = MEDIAN) -> str:
    """One mode's best speedup in words, by its verdict (contract/verdict.py); `found`:
    the mode's speedups, `stat` the statistic of their step times (step_statistic)."""
    mode, batch = b.mode, b.batch_size
    measured = [x.batch_size for x in found]
    if b.verdict == vd.INCONCLUSIVE:
        return (f"{mode}: inconclusive at every measured batch size (95% intervals span "
                f"both sides of 1x by more than {vd.SPREAD_LIMIT:g}x; narrowest at batch "
                f"{batch}: {vd.interval_text(b.ci_low, b.ci_high)})")
    ci = format_interval("speedup", b.ci_low, b.ci_high)
    times = (f"{format_value('step_ms', b.step_ms)} vs "
             f"{format_value('step_ms', b.eager_ms)}, {stat}s")
    figure = f"{format_value('speedup', b.speedup)}{'' if ci == NO_INTERVAL else f' ({ci})'}"
    if b.verdict == vd.SAME:
        line = (f"{mode}: no speedup beyond noise: at best {figure} at batch {batch} "
                f"({times})")
    elif b.verdict == vd.SLOWER:
        line = f"{mode}: slower than eager: at best {figure} at batch {batch} ({times})"
    else:
        line = f"{mode}: up to {figure} over eager, at batch {batch} ({times})"
    if ci == NO_INTERVAL:
        line += f"; {NO_INTERVAL}"
    elif ties := _ties(b, found):
        line += f"; within noise of it: {batch_span(ties, measured)}"
    if vd.medians_disagree(b.eager_ms, b.step_ms, b.ci_low, b.ci_high):
        # Two statistics that disagree are named, not left side by side (as the CLI's #).
        line += f"; {vd.disagree_text(b.eager_ms, b.step_ms)}"
    if b.inconclusive:
        line += f"; inconclusive, not ranked: {batch_span(b.inconclusive, measured)}"
    return line


def _break_even_line(points: Sequence[Measurement]) -> str:
    be = sp.break_even(points)
    g = f"{be.threshold:g}x"
    said = BREAK_EVEN_LABEL[0].upper() + BREAK_EVEN_LABEL[1:]  # "Break-even vs compile"
    if be.status == "crosses" and be.batch_size is not None and be.last_gaining is not None:
        at = dict(be.ratios)
        return (f"{said}: from batch {be.batch_size} on, reduce-overhead gains less "
                f"than {g} over compile ({at[be.batch_size]:.2f}x there; "
                f"{at[be.last_gaining]:.2f}x at batch {be.last_gaining}).")
    if be.status == "never-below":
        return (f"{said}: not reached: reduce-overhead gains at least {g} over "
                f"compile at every measured batch size (up to {be.last_gaining}).")
    if be.status == "always-below":
        return (f"{said}: reduce-overhead gains less than {g} over compile at every "
                "measured batch size.")
    return (f"{said}: unknown (needs compile and reduce-overhead at the same "
            "batch size).")


def _payback_lines(bests: Sequence[sp.ModeBest]) -> list[str]:
    lines, unknown = [], []
    for b in bests:
        if b.verdict == vd.INCONCLUSIVE:
            continue
        p = sp.payback(b.best)
        if p.never:
            lines.append(f"{b.mode}: saves nothing per step at batch {b.batch_size}, so "
                         "its setup never pays back.")
        elif p.steps is None or p.setup_s is None:
            unknown.append(b.mode)
        else:
            lines.append(f"{b.mode}: its {duration_text(p.setup_s)} setup pays back after "
                         f"{p.steps:,.0f} steps at batch {b.batch_size}.")
    if unknown:
        lines.append(f"Payback unknown for {', '.join(unknown)} (setup time not recorded).")
    return lines


def per_kernel_figures(points: Sequence[Measurement]) -> list[tuple[str, float]]:
    """A published kernel-chain run's own figures (the V100 blog's), where its points give
    no step: (what, us per kernel) per ok point, eager's sync-after-each-kernel loop too.
    Empty for a run whose points have a step (its per-kernel figure is step / kernels)."""
    out = []
    for m in sp.in_mode_order(p for p in points if p.status == "ok"):
        if m.timing.step_ms is not None:
            continue
        if (us := number_or_none(m.launches.per_kernel_us)) is not None:
            out.append((m.mode, us))
        if (sync := number_or_none(m.launches.per_kernel_us_sync_each_kernel)) is not None:
            out.append((f"{m.mode} synced after each kernel", sync))
    return out


def per_kernel_line(points: Sequence[Measurement]) -> str | None:
    """The per-kernel figures in one line, with what they are and at what size, e.g.
    'Per kernel, as published (CPU wall-clock time per kernel), at 500,000 elements:
    eager 3.8 us; cuda-graph 3.4 us'. None without such figures."""
    found = per_kernel_figures(points)
    if not found:
        return None
    ok = [m for m in points if m.status == "ok"]
    sizes = sorted({m.batch_size for m in ok})
    stat = next((str(m.source.statistic) for m in ok if m.source.statistic), "")
    what = f" ({stat.split(',')[0]})" if stat else ""
    at = ", ".join(f"{b:,}" for b in sizes)
    return (f"Per kernel, as published{what}, at {at} elements: "
            + "; ".join(f"{name} {us:g} us" for name, us in found))


def headline(points: Sequence[Measurement]) -> list[str]:
    """The run's answer in a few sentences: best speedup per mode and where, with its 95%
    interval and the batch sizes within noise of it (contract/speedups.py ranks by the
    interval's lower bound and leaves inconclusive points out), the break-even batch size,
    how many steps pay back the setup, and the host's launch cost."""
    found = sp.speedups(points)
    bests = sp.mode_bests(found)
    stat = step_statistic(points)
    lines = [_best_line(b, [x for x in found if x.mode == b.mode], stat) for b in bests]
    if not bests and (kernels := per_kernel_line(points)):
        lines.append(kernels + ". No step times, so no speedup over eager to rank.")
    elif not bests:
        lines.append("No speedup to show: no mode has an ok point beside an ok eager point.")
    elif any(b.verdict == vd.INCONCLUSIVE or b.inconclusive for b in bests):
        lines.append(vd.RULE_TEXT)
    lines.append(_break_even_line(points))
    lines += _payback_lines(bests)
    cost = launch_cost(points)
    if cost is not None:
        lines.append(f"Host launch cost: {cost.median:.1f} us per launch (median; "
                     f"{cost.low:.1f}-{cost.high:.1f} us over {cost.points} points).")
    lines.extend(energy.findings(points))
    return lines
