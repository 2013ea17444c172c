"""Runs (/): every run, filtered by GPU / workload / torch; select runs to open or compare.
The filters live in the URL (?gpu=...&workload=...&torch=...), so the view is shareable."""

import streamlit as st

from contract.comparability import compare_rule
from contract.run_summary import MEMORY_COST_LABEL
from pages.logic import board, links
from pages.logic.plain import plain
from pages.widgets import data, frame, parts, url

frame.ensure_frame()

st.title("Runs")

# --- settings ---------------------------------------------------------------------------
options = data.filter_options()
c1, c2, c3 = st.columns(3)
gpus = url.multiselect_param(c1, "GPU", "gpu", options["gpu"])
workloads = url.multiselect_param(c2, "Workload", "workload", options["workload"])
torches = url.multiselect_param(c3, "torch version", "torch", options["torch"])

# --- load -------------------------------------------------------------------------------
# The board alone: the run list's records are read only for the runs a reader selects
# (20 sessions opening the page at once each unpickled a thousand of them otherwise).
table = data.board(gpus, workloads, torches)

# --- show -------------------------------------------------------------------------------
if table.empty:
    if gpus or workloads or torches:
        st.info("No run matches these filters.")
    else:
        st.info("No runs yet. Measure one with `python -m runner sweep --workload mlp "
                "--batch-sizes 1,8,64,512` or upload a bundle on the Import page.")
        st.page_link(frame.PAGES["import"], label="Import a bundle", icon=":material/upload:")
    st.stop()

published = int((table["source"] == "published").sum())
st.caption(f"{len(table)} run(s)" + (f", {published} of them published figures "
                                     "(not measured here)" if published else "")
           + ". Select rows to open or compare them. Noise: how many points ended on "
             "their time budget with a wide interval (noisy), saw the host's launch cost "
             "move (host unstable), or predate intervals (no interval). Key figure: the "
             "run's best speedup over eager (ranked by its 95% lower bound) and its memory "
             f"cost, the {MEMORY_COST_LABEL}; then each graph mode's best, its batch and "
             "graph pool; click a column header to sort.")

# What a reader scans first fits 1280 px (id, link, which GPU, what workload, the key
# figure, stretched to the screen's edge), each text column as wide as its longest entry
# so none is cut; the key figure's memory cost, torch, points and the sortable key
# figures follow, a scroll away.
widths = board.board_widths(table)
first = [*list(widths)[:5], "memory cost", "torch", "points", "noise", "created", "label"]
event = st.dataframe(
    table, key="runs_table", hide_index=True, on_select="rerun",
    selection_mode="multi-row", placeholder=board.NO_FIGURE,
    column_order=[*first, *(c for c in table.columns if c not in first)],
    column_config={
        **{c: st.column_config.Column(c, width=w, help=board.KEY_HELP.get(c))
           for c, w in widths.items()},
        "id": st.column_config.NumberColumn("id", format="%d", width=widths["id"]),
        "link": st.column_config.LinkColumn("open", display_text="open ↗",
                                            width=widths["link"]),
        # Numbers, so a click on the header sorts them as numbers; an unknown one shows
        # the placeholder dash, not streamlit's grey "None".
        **{c: st.column_config.NumberColumn(c, format=board.key_format(c),
                                            help=board.KEY_HELP.get(c),
                                            width=board.key_width(c))
           for c in board.key_columns()},
        **{c: st.column_config.TextColumn(c, width=widths[c], help=board.KEY_HELP[c])
           for c in ("key figure", "memory cost")},
    },
)
chosen = [int(table.iloc[i]["id"]) for i in event.selection.rows]

if len(chosen) == 1:
    st.page_link(frame.PAGES["run"], label=f"Open run {chosen[0]}", icon=":material/monitoring:",
                 query_params={"run": str(chosen[0])})
if len(chosen) > 1 and (refused := board.compare_refusal(data.headers(chosen))):
    for reason in refused:
        st.warning(plain(reason))
elif len(chosen) > 1:
    shown = chosen[:links.MAX_COMPARE]
    # Runs that measure different things are still offered (a reader may want the
    # contrast), but knowingly: what differs first, in the warning Compare shows above
    # its chart, and the link says so.
    differ = compare_rule(data.headers(shown))[1]
    if differ:
        st.warning("  \n".join(plain(line) for line in differ), icon=":material/warning:")
    st.page_link(frame.PAGES["compare"], label=board.compare_label(shown, differ),
                 icon=":material/compare_arrows:", query_params={"run": [str(i) for i in shown]})
    if len(chosen) > links.MAX_COMPARE:
        st.caption(f"Compare shows at most {links.MAX_COMPARE} runs.")

parts.share_link(links.page_url(url.app_url(), links.RUNS,
                             {"gpu": gpus, "workload": workloads, "torch": torches}))
