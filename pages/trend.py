"""Trends (/trend?workload=mlp&gpu=...): one workload, parameter set and GPU over torch
versions and dates; each mode's speedup at chosen batch sizes, changes outside the noise
marked. The whole view lives in the URL, so the link reproduces it."""

import hashlib

import streamlit as st

from contract import verdict
from contract.limits import REGRESSION_THRESHOLD
from pages.charts import trend_chart
from pages.logic import board, links, points_table, trend_changes, trends
from pages.logic.plain import MAX_CELL, cut, plain
from pages.widgets import data, frame, parts, url
from runner.history.series import ORDERS

frame.ensure_frame()
st.title("Trends")

# --- settings: the query string, checked before anything is drawn ------------------------
options = data.filter_options()
asked = {k: st.query_params.get_all(k) for k in trends.QUERY_KEYS}
try:
    q = trends.parse_query(asked, options["workload"], options["gpu"])
except trends.TrendQueryError as e:
    st.error(str(e))
    st.page_link(frame.PAGES["trend"], label="Open Trends without parameters",
                 icon=":material/trending_up:", query_params={})
    st.stop()
if not options["workload"]:
    st.info("No runs yet: a trend needs sweeps of one workload on one GPU.")
    st.stop()


def pick(container, label, choices, wanted, key, widget="selectbox", **kw):
    """A selectbox (or radio) that starts at the URL's value (when it is a choice)."""
    if key not in st.session_state or st.session_state.get(f"{key}_url") != wanted \
            or st.session_state[key] not in choices:
        st.session_state[key] = wanted if wanted in choices else choices[0]
        st.session_state[f"{key}_url"] = wanted
    return getattr(container, widget)(label, choices, key=key, **kw)


# Without a workload or GPU in the URL, open at the series with the most runs: the first
# workload alphabetically may have a single run, which is no trend.
every = data.runs()
first = trends.default_view(every, q.workload) if q.gpu is None else None
c1, c2 = st.columns(2)
workload = pick(c1, "Workload", options["workload"], q.workload or (first or (None,))[0],
                "tr_workload")
gpu = pick(c2, "GPU", options["gpu"], q.gpu or (first[1] if first and first[0] == workload
                                              else None), "tr_gpu",
           format_func=lambda g: "CPU" if g == "cpu" else g)
runs = data.series_headers(workload, gpu)
if not runs:
    st.info(f"No sweep of {plain(workload)} on {plain(gpu)} yet. Pick another GPU or workload.")
    st.stop()
sets = trends.param_sets(runs)
if q.params is not None and q.params not in sets:
    st.warning(f"{plain(f'?params={q.params[:80]!r}')} matches no sweep of "
               f"{plain(workload)} on {plain(gpu)}; "
               "showing the parameter set with the most runs")
# The page's width: a set of six parameters and its dtype was cut in a half-page picker.
chosen_set = pick(st, "Parameter set (workload parameters · dtype)", list(sets), q.params,
                  "tr_params", format_func=lambda s: cut(s, MAX_CELL))

# One machine's runs (GPU, host CPU, driver) unless the reader mixes them: a run of
# another host is named apart, never joined silently (issue 47).
runs = [r for r in runs if r.id in sets[chosen_set]]
groups = trends.machines(runs)
if q.machine is not None and q.machine not in (*groups, trends.MIXED):
    st.warning(f"{plain(f'?machine={cut(q.machine, 80)!r}')} ran none of these sweeps; "
               "showing the machine with the most runs")
machine = (pick(st, "Machine (GPU · host CPU · driver)", [*groups, trends.MIXED],
                q.machine if q.machine in (*groups, trends.MIXED) else None, "tr_machine",
                format_func=lambda m: m if m == trends.MIXED else
                f"{cut(m, MAX_CELL)} ({len(groups[m])} runs)")
           if len(groups) > 1 else trends.MIXED)
machine, runs, others = trends.machine_runs(runs, machine)
for name, ids in others.items():
    st.caption(plain(f"Shown apart, not in this series: {len(ids)} run(s) on another "
                     f"machine, {name} (#{', #'.join(map(str, ids))}). Pick it above, or "
                     f"{trends.MIXED} to mix them."))

# --- load ---------------------------------------------------------------------------------
points = data.key_points([r.id for r in runs])
measured = trends.measured_batches(points)
# Wide enough at 1280 px for three batch sizes and the three graph modes; the order of
# runs on a line of its own below (its longest choice was cut in a third column).
c1, c2 = st.columns([2, 3])
wanted = [b for b in q.batches if b in measured] or trends.default_batches(points)
missing = [b for b in q.batches if b not in measured]
if missing:
    st.warning(f"?batch={missing[0]} was not measured by these runs; measured: "
               f"{', '.join(map(str, measured))}")
# Keyed by the set's digest, not its text: a parameter of 100,000 characters made a key
# (sent to the browser) of as many.
set_key = hashlib.sha256(chosen_set.encode("utf-8", "surrogatepass")).hexdigest()[:16]
batches = c1.multiselect("Batch sizes", measured, wanted, key=f"tr_b_{set_key}",
                         max_selections=trends.MAX_BATCHES)
# The modes these runs measured (a CPU series has no graph modes to offer or default to).
measured_modes = trends.measured_modes(points)
if (unmeasured := [m for m in q.modes or () if m not in measured_modes]):
    st.warning(plain(f"?mode={unmeasured[0]} was not measured by these runs; measured: "
                     f"{', '.join(measured_modes)}"))
modes = c2.multiselect("Modes", measured_modes,
                       [m for m in q.modes or measured_modes if m in measured_modes],
                       key=f"tr_modes_{set_key}")
order = pick(st, "Order runs by", list(ORDERS), q.order, "tr_order", widget="radio",
             format_func=ORDERS.get, horizontal=True)
st.query_params.from_dict({"workload": workload, "gpu": gpu, "params": chosen_set,
                           "batch": [str(b) for b in batches], "mode": modes,
                           **({"order": order} if order != "torch" else {}),
                           **({"machine": machine} if len(groups) > 1 else {})})
table = trends.trend_table(runs, points, batches, modes, order)

# --- show ---------------------------------------------------------------------------------
@st.cache_data(ttl=data.CACHE_TTL_S, show_spinner=False, max_entries=32)
def unseen_of(steps):
    """trend_changes.unseen, cached on the judged steps: it runs the change-point search
    a dozen times a series (about 0.1 s a series of 40 runs)."""
    return trend_changes.unseen(steps)


def draw_rows(figures, key: str) -> None:
    """(batch, chart) pairs two a row while the runs' labels fit half the page; a long
    history takes the width."""
    per_row = 2 if len(runs) <= trend_chart.RUNS_PER_HALF_ROW else 1
    for row in range(0, len(figures), per_row):
        for col, (b, chart) in zip(st.columns(per_row), figures[row:row + per_row],
                                   strict=False):
            with col:
                parts.chart(chart, key=f"{key}_{b}")


st.caption(f"{len(runs)} run(s) of {plain(workload)} ({plain(chosen_set, MAX_CELL)}) on "
           f"{plain(gpu)}, "
           f"ordered by {ORDERS[order]}. Speedups: a change is marked (triangle) only when "
           "the ratio of the two speedups has a 95% interval wholly above or below 1 "
           f"(Compare's rule); otherwise it is within noise. {verdict.RULE_TEXT}")
# Each run's key figure in the series' order, as the board and Compare quote it.
ordered = trends.ordered_runs(runs, order)
parts.text_table(board.key_table(data.summaries(ordered["id"].astype(int).tolist()),
                                 dict(zip(ordered["id"].astype(int), ordered["run"],
                                          strict=True))))
if len(runs) < 2:  # no line to draw: say what a trend needs, and where there is one
    others = trends.trend_series(every)
    st.info(f"One run in this series: {trends.TREND_NEEDS}. " + (
        f"{len(others)} series here have them:" if len(others) else
        "No series here has a second run yet: run a sweep again with the same workload, "
        "GPU, parameters and dtype to start one. Meanwhile each run is one point below."),
        icon=":material/info:")
    for _, s in others.head(trends.MAX_BATCHES).iterrows():
        st.page_link(frame.PAGES["trend"], icon=":material/trending_up:",
                     label=plain(f"{s['workload']} on {s['gpu']}: {s['runs']} runs "
                                 f"({s['params']})"),
                     query_params={"workload": s["workload"], "gpu": s["gpu"],
                                   "params": s["params"]})
    if others.empty:
        sweeps = [r.header.id for r in every if r.header.kind == "sweep"]
        alone = trends.single_runs(data.summaries(sweeps))
        if (chart := parts.spec(trend_chart.single_runs_chart, alone)) is not None:
            parts.chart(chart, key="single_runs")
if len(runs) >= 2:  # change points of each mode's step time along the series
    st.subheader("Change points")
    st.caption(trend_changes.RULE_TEXT)
    steps, found = trend_changes.trend_changes(
        ordered, data.history_points(ordered["id"].astype(int).tolist()), order, batches,
        modes)
    unseen = unseen_of(steps)
    if found.empty:  # green only where a change of the CI gate's threshold would show
        said = ("No change point in the step times of these modes and batch sizes."
                + (f" {unseen.text()}" if unseen else ""))
        if unseen and unseen.hides(REGRESSION_THRESHOLD):
            st.warning(said, icon=":material/visibility_off:")
        else:
            st.success(said)
    else:
        st.dataframe(trend_changes.change_table(found, url.app_url()), hide_index=True,
                     key="change_points", height="content",
                     column_config={
            "change": st.column_config.NumberColumn(format="%+.1f%%"),
            "compare": st.column_config.LinkColumn(display_text="compare",
                                                   help="the two runs in Compare")})
        if unseen:
            st.caption(unseen.text())
    if unseen:
        st.caption(trend_changes.UNSEEN_RULE)
    draw_rows([(b, c) for b in batches
               if (c := parts.spec(trend_chart.step_chart, steps, found, b)) is not None],
              "steps")
    st.subheader("Speedup over eager")
if table.empty:
    st.info("No speedup measured at these batch sizes and modes.")
else:
    moved = trends.changes(table)
    if len(runs) >= 2 and moved.empty:
        st.success("No change outside the noise between consecutive runs.")
    for _, r in moved.iterrows():
        st.markdown(f"- **{r['mode']}** at batch {int(r['batch_size'])}: "
                    f"{plain(r['change vs previous'])} in {plain(r['run'])}")
    draw_rows([(b, c) for b in batches
               if (c := parts.spec(trend_chart.trend_chart, table, b)) is not None], "trend")
    if (table["speedup_ci_low"].isna() & table["speedup_ci_high"].notna()).any():
        st.caption(plain(trends.OPEN_BELOW_NOTE))
    # Drawn whole, without the run's id, torch and date apart (its name holds them); the
    # energy figures in a table of their own, where some run measured energy (a column of
    # dashes says nothing): side by side, the two did not fit 1280 px.
    columns = {
        "batch_size": st.column_config.NumberColumn("batch", format="%d"),
        "energy_mj_per_step": st.column_config.NumberColumn("energy mJ/step", format="%.3f"),
        "energy_gain": st.column_config.NumberColumn("energy gain", format="%.2fx"),
        "speedup": st.column_config.NumberColumn("speedup", format="%.2fx"),
        "speedup_ci_low": st.column_config.NumberColumn("95% low", format="%.2fx"),
        "speedup_ci_high": st.column_config.NumberColumn("95% high", format="%.2fx")}
    shown = [trends.SHOWN_TREND_COLUMNS]
    if table[list(trends.ENERGY_TREND_COLUMNS)].notna().any().any():
        shown.append(["run", "mode", "batch_size", *trends.ENERGY_TREND_COLUMNS])
    for cols in shown:
        st.dataframe(table, hide_index=True, placeholder="—", column_order=cols,
                     height=points_table.shown_height(len(table)), column_config=columns)

parts.share_link(links.page_url(url.app_url(), links.PAGES["trend"].url_path,
                             dict(st.query_params.to_dict(),
                                  batch=[str(b) for b in batches], mode=modes)))
