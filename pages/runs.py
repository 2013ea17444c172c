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
           + ". Select rows to open or compare them, and to read their memory cost, "
             "noise, label and parameters whole. Key figure: the run's best speedup over "
             "eager (ranked by its 95% lower bound); Graph modes' best: each graph mode's "
             f"best speedup, its batch and its {MEMORY_COST_LABEL}; click a column header "
             "to sort.")

# One set of columns at a time, each within the grid at 1280 px (board.COLUMN_SETS): the
# whole board ran 3,000 px past the page's edge. The set is in the URL (?columns=).
shown = url.choice_param(st, "radio", "Columns", "columns", list(board.COLUMN_SETS),
                         key="board_columns", horizontal=True, label_visibility="collapsed")
widths = board.set_widths(table, shown)
labels = board.column_labels(board.COLUMN_SETS[shown])
event = st.dataframe(
    table, key="runs_table", hide_index=True, on_select="rerun",
    selection_mode="multi-row", placeholder=board.NO_FIGURE,
    column_order=board.COLUMN_SETS[shown],
    column_config={
        **{c: st.column_config.Column(labels.get(c, c), width=w, help=board.KEY_HELP.get(c))
           for c, w in widths.items()},
        # The id, a link to the run's page (its digits shown, the page opened on a click).
        "link": st.column_config.LinkColumn("id", display_text=r"run=(\d+)$",
                                            width=widths["link"], help="the run's id: a "
                                            "click opens its page"),
        # Numbers, so a click on the header sorts them as numbers; an unknown one shows
        # the placeholder dash, not streamlit's grey "None".
        **{c: st.column_config.NumberColumn(labels.get(c, c), format=board.key_format(c),
                                            help=board.KEY_HELP.get(c), width=widths[c])
           for c in board.key_columns() if c in widths},
    },
)
chosen = [int(table.iloc[i]["id"]) for i in event.selection.rows]

if chosen:  # what no grid column shows whole, for the runs picked
    parts.text_table(board.detail_table(table, chosen))
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
