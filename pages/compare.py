"""Compare (/compare?run=ID&run=ID...): speedup curves of several runs in one chart, a
colour per GPU and torch version, a mark per mode; a per-batch ratio table; an environment
diff; one line per reason the runs measure different things."""

import json

import streamlit as st

from contract import verdict
from contract.host_split import REFERENCE_LAUNCH_US
from contract.vocab import RUN_KIND_TABLE
from pages.charts import run_charts
from pages.logic import (
    across_gpus,
    board,
    comparing,
    gpu_gains,
    links,
    points_table,
    workload_views,
)
from pages.logic.names import picker_label
from pages.logic.plain import plain
from pages.logic.text_width import fit_px
from pages.widgets import data, frame, parts, timeline_view, url

frame.ensure_frame()

st.title("Compare runs")

GAINS_ANCHOR = "which-gpu-gains-more"


def _fit(table, formats: dict[str, str] | None = None) -> dict:
    """Each column as wide as its widest cell or header (none cut at 1280 px: "cuda-grap",
    "98% GPU-bo" were), numbers in `formats` (column -> printf) as numbers."""
    out = {}
    for c in table.columns:
        label = "batch" if c == "batch_size" else c
        fmt = (formats or {}).get(c)
        cells = table[c].dropna()
        width = fit_px([label, *(fmt % v if fmt else str(v) for v in cells)])
        out[c] = (st.column_config.NumberColumn(label, format=fmt, width=width) if fmt
                  else st.column_config.Column(label, width=width))
    return out


def _side_config(table, unit: str, number: str) -> dict:
    """A side-by-side table's columns: mode wide enough for "reduce-overhead", a run's
    figures under its short name ('#9 H100 MiB')."""
    return {"mode": st.column_config.TextColumn("mode", width=125),
            "batch_size": st.column_config.NumberColumn("batch", format="%d", width=70),
            **{c: st.column_config.NumberColumn(c, format=number, width=fit_px([c]))
               for c in table.columns if c.endswith(f" {unit}")}}


AT_PARAM, BASELINE_PARAM = "at_us", "baseline"  # the share link's names


def _launch_cost_picker() -> float:
    return url.choice_param(st, "radio", "Common launch cost (us a launch)", AT_PARAM,
                            REFERENCE_LAUNCH_US, key="at_us", index=1, horizontal=True,
                            format_func=lambda u: f"{u:g} us")


def _gains_section(headers, points, at_us: float) -> None:
    """Which of two measured GPUs gains more from graphs, per graph mode and batch: the
    answer only where the speedups' intervals part, the speedup each GPU would show at a
    common launch cost, and its GPU busy time (the GPU's work) beside its launch cost (the
    host's)."""
    table = gpu_gains.gains_long(headers, points, at_us)
    st.caption(plain(
        "Per graph mode and batch size both GPUs measured: each one's speedup over eager "
        f"(95% interval); at {at_us:g} us: the speedup with the host's launch cost made "
        f"{at_us:g} us on both; GPU busy: the GPU's own work a step; launch us: the "
        "host's launch cost as measured. Gains more: only where its interval lies above "
        f"the other's ('{gpu_gains.OVERLAP}': they overlap, no answer); 'also at "
        f"{at_us:g} us': it stays ahead with the launch cost made equal, so the launch "
        "cost does not explain it (the GPU busy times beside say whether the GPU's work "
        f"does; else the rest of the host's time a step); '{gpu_gains.HOSTS_COST}': it "
        "does not, so the hosts' launch costs did."))
    if table.empty:
        st.info("These GPUs share no graph mode at one batch size with a speedup each.")
        return
    st.markdown(plain(gpu_gains.summary(table)))
    # Widths measured on the 1280 px screenshot: every cell whole, the table no wider
    # than the page ("reduce-overhead", "inconclusive (95% 0.65-1.68x)").
    widths = dict(zip(table.columns, (125, 55, 80, 182, 70, 90, 72, 130), strict=True))
    st.dataframe(table, hide_index=True, key="gains_table", height=38 + 35 * len(table),
                 placeholder="—",
                 column_config={c: st.column_config.Column(c, width=w)
                                for c, w in widths.items()})
    if (out := gpu_gains.left_out(headers)):
        st.caption(plain("Not in this answer (published: no launch cost to make equal, no "
                         "interval to part): " + ", ".join(out) + "."))


# --- settings: ids from the URL; the picker below rewrites the URL ------------------------
asked = url.run_ids_from_url()
every_run = [r.header for r in data.runs()]
sweeps = [h for h in every_run if RUN_KIND_TABLE[h.kind].curves]  # serve runs have none
names = comparing.run_names(sweeps)
labels = {h.id: h.label or "" for h in sweeps}
found = [i for i in asked if i in names]
kinds = {h.id: h.kind for h in every_run}
for rid in sorted(set(asked) - set(names) & set(kinds)):
    st.warning(f"run {rid} is a {kinds[rid]} run: it has no speedup curves to compare "
               f"(open it on {'the Serve page' if kinds[rid] == 'serve' else 'its page'})")
for line in links.missing_runs(asked, kinds):
    st.warning(plain(line))

picked = st.multiselect("Runs to compare", list(names), default=found,
                        format_func=lambda i: f"{names[i]} · {picker_label(labels[i])}",
                        max_selections=links.MAX_COMPARE, key=f"pick_{'_'.join(map(str, found))}")
if picked != found:
    url.set_run_ids(picked)
    st.rerun()
if len(found) < 2:
    st.info("Pick at least two runs (or open a link such as /compare?run=1&run=2).")
    st.stop()

# --- load -------------------------------------------------------------------------------
headers = data.headers(found)
points = data.points(found)

# --- show -------------------------------------------------------------------------------
# One line per distinct reason, warnings in one box: a banner per field and run pushed
# the chart below the fold.
notes = comparing.caveats(headers, points)
warned = [line for kind, line in notes if kind == "warning"]
if warned:
    st.warning("  \n".join(plain(w) for w in warned), icon=":material/warning:")
if (long := comparing.long_params(headers)):  # the cut values, a click away in full
    st.download_button(f"Parameters in full of run(s) {', '.join(map(str, long))} (.json)",
                       json.dumps(long, indent=1), "compared-parameters.json",
                       "application/json", key="params_dl", on_click="ignore",
                       icon=":material/download:")
for line in (line for kind, line in notes if kind == "info"):
    st.info(plain(line), icon=":material/article:")
differs = across_gpus.cross_gpu_differences(headers, points)
if differs:  # a ratio across GPUs is the GPU's and all of these at once
    st.info(plain(differs), icon=":material/dns:")
if gpu_gains.applies(headers):  # the cross-GPU answer lies far below the chart
    # Plain words, no Markdown link: the page's text is checked for links a bundle
    # could have planted (tests/e2e/test_untrusted_text.py).
    st.caption("Below the tables: which GPU gains more from graphs, and why, per mode "
               "and batch size.")

speedups = comparing.compare_speedups(points, headers)
figure = parts.spec(run_charts.compare_chart, speedups)
if figure is None:
    st.info("No speedup to draw: none of these runs has an ok mode point beside an ok eager "
            "point at the same batch size.")
else:
    parts.chart(figure, key="compare_chart")
    # The chart's Mode legend shows each mode's mark; its line's dash is named here.
    st.caption(plain(comparing.dash_legend(r.speedups for r in speedups)))
    # A run with nothing in the chart is named, so its absence from the legend reads as a
    # fact about the run rather than a bug.
    drawn = {r.run for r in speedups if any(s.mode != "eager" for s in r.speedups)}
    absent = [names[i] for i in found if names[i] not in drawn]
    if absent:
        st.caption(f"Not in the chart: {plain(', '.join(absent))}: no step time beside an "
                   "eager one at the same batch size (see the tables below).")

per_kernel = workload_views.compare_per_kernel(points, headers)
key_figures = across_gpus.key_figures_per_kernel(
    board.key_table(data.summaries(found), names), per_kernel)
parts.text_table(key_figures)
# The tables below name a run short ('#9 H100'): whole names made them wider than the page.
st.caption(plain(comparing.names_legend(headers)))

if workload_views.has_published_raw_cuda(headers):
    st.info(workload_views.RAW_CUDA_NOTE, icon=":material/memory:")
if not per_kernel.empty:
    st.subheader("Per kernel (kernel-chain)")
    # Which rows are published is the info line's (above the chart): a source column
    # repeating it pushed the table past the page at 1280 px.
    shown_kernels = per_kernel.drop(columns="source")
    st.dataframe(shown_kernels, hide_index=True, key="per_kernel", placeholder="—",
                 height=points_table.shown_height(len(shown_kernels)),
                 column_config=_fit(shown_kernels, {"batch (elements)": "%d"}))

arrived_for_timeline = "batch" in st.query_params  # a ?batch= link opens at the timeline
st.subheader("One step per run", anchor=timeline_view.TIMELINE_ANCHOR)
batch = None
with parts.drawn("The step timeline"):
    batch = timeline_view.timeline_section(found, points, lambda x: names[x.run_id],
                                           key="timeline", pick_mode=True)
timeline_view.scroll_to_on_arrival(timeline_view.TIMELINE_ANCHOR,
                                   arrived_for_timeline and batch is not None,
                                   key="compare_" + "_".join(map(str, found)))

st.subheader("Per batch size")
base_names = comparing.run_names(headers)
baseline = url.choice_param(st, "selectbox", "Baseline run (ratios are baseline time / "
                            "run time: > 1 means faster than the baseline)", BASELINE_PARAM,
                            found, key=f"baseline_{'_'.join(map(str, found))}",
                            format_func=base_names.get)
ratios = comparing.ratio_rows(comparing.ratio_table(points, headers, baseline), headers,
                             baseline)
if differs:
    st.caption(plain(differs))
st.caption("95%: a conservative interval of the ratio from both runs' step-time intervals "
           "(low / high .. high / low). It is within noise where it includes 1.0, that is "
           "where the two runs' intervals overlap; runs measured before intervals show no "
           f"interval. {verdict.RULE_TEXT}")
st.dataframe(ratios, hide_index=True, key="ratio_table", placeholder="—",
             height=points_table.shown_height(len(ratios)),
             column_config=_fit(ratios, {"batch_size": "%d", "vs baseline": "%.2fx",
                                         "run ms": "%.3f", "baseline ms": "%.3f"}))

at_us = None
gains_shown = gpu_gains.applies(headers)
if gains_shown:  # two measured GPUs: which one graphs help more, and why
    st.subheader("Which GPU gains more from graphs", anchor=GAINS_ANCHOR)
    at_us = _launch_cost_picker()
    _gains_section(headers, points, at_us)

st.subheader("What belongs to the GPU, what to the host")
if at_us is None:
    at_us = _launch_cost_picker()
st.caption(plain(across_gpus.normalise_rule(at_us)) + (
    " (the common launch cost is picked above, under Which GPU gains more)"
    if gains_shown else "") + " GPU busy: the GPU's kernels a step "
           f"(GPU-bound: busy {across_gpus.GPU_BOUND_SHARE:.0%} of the step or more); "
           "launch cost: the host's cost of one trivial kernel launch.")
gpu_host = across_gpus.gpu_host_table(points, headers, at_us)
st.dataframe(gpu_host, hide_index=True, key="gpu_host_table", placeholder="—",
             height=points_table.shown_height(len(gpu_host)),
             column_config=_fit(gpu_host, {"batch": "%d"}))

st.subheader("Memory cost over eager, side by side")
memory = comparing.memory_table(points, headers)
old_memory = comparing.old_memory_runs(points, headers)
if memory.empty:
    st.caption("None of these runs has a memory cost over eager (CPU runs and published "
               "figures measured none; runs from before the isolated memory pass have "
               "graph pools only, on their own pages).")
else:
    st.caption("What each mode keeps on the GPU beyond eager at the same batch size (MiB), "
               "each measured alone from a clean state.")
    st.dataframe(memory, hide_index=True, key="memory_table", placeholder="—",
                 height=points_table.shown_height(len(memory)),
                 column_config=_side_config(memory, "MiB", "%+.1f"))
    if (bare := [n for n in comparing.without(memory, headers, "MiB")
                 if n not in old_memory]):
        st.caption(plain("No memory cost over eager measured (CPU runs and published "
                         "figures measure none): " + ", ".join(bare) + "."))
if old_memory:
    st.caption(plain("Measured before the isolated memory pass, with graph pools but no cost "
                     "over eager: " + ", ".join(old_memory) + "."))

energy = comparing.energy_table(points, headers)
if not energy.empty:  # no section for runs without energy: nothing to compare
    st.subheader("Energy per step, side by side")
    st.caption("From the GPU's energy counter (mJ per step, median over windows) per mode "
               "and batch size.")
    st.dataframe(energy, hide_index=True, key="energy_table", placeholder="—",
                 height=points_table.shown_height(len(energy)),
                 column_config=_side_config(energy, "mJ", "%.3f"))
    if (bare := comparing.without(energy, headers, "mJ")):
        st.caption(plain("No energy figure (published figures, CPU runs, runs before "
                         "bundle version 5): " + ", ".join(bare) + "."))

st.subheader("Environment differences")
diff = comparing.environment_diff(headers, points=points)
if diff.empty:
    st.caption("The runs' environments and workloads are identical.")
else:
    # Static tables: their cells wrap, so four runs' parameters side by side stay within
    # the page at 1280 px (a grid ran 500 px past it).
    parts.text_table(diff.drop(columns="differs"))
# Drawn only while open: closed, its table (every field of every run) was still drawn.
with st.expander("All fields", key="all_fields", on_change="rerun") as all_fields:
    if all_fields.open:
        every_field = comparing.environment_diff(headers, only_differences=False,
                                                 points=points)
        parts.text_table(every_field.assign(differs=every_field["differs"].map(
            {True: "yes", False: "no"})))

# The link carries what is drawn: the runs, the timeline's batch size, mode and scale,
# the baseline run and the common launch cost.
parts.share_link(links.page_url(url.app_url(), links.COMPARE, {
    "run": found, "batch": batch,
    timeline_view.MODE_PARAM: st.query_params.get(timeline_view.MODE_PARAM) if batch else None,
    links.FIT_PARAM: st.query_params.get(links.FIT_PARAM),
    BASELINE_PARAM: baseline, AT_PARAM: url.value_text(at_us)}))
