"""Serve (/serve?run=ID): a stream of requests of varying batch size under each strategy.
Memory against throughput, padding and fallback by batch size, the bucket advisor with a
memory budget, and the 8/16/32 example told with the run's own numbers. Above them, with or
without a run: which sizes to capture in vLLM, SGLang or torch.compile for a distribution
pasted or uploaded here (contract/capture_advisor.py)."""

import streamlit as st

from contract import capture_sizes as cs
from contract import graph_memory as gm
from pages.charts import capture_charts
from pages.charts import serve_charts as sc
from pages.logic import capture_advice as ca
from pages.logic import serve_tables
from pages.logic.names import device_name, run_choice
from pages.logic.plain import plain
from pages.widgets import data, frame, parts, url

frame.ensure_frame()
CAPTURE = "capture"  # the capture section's open state, kept in the URL


def capture_section() -> None:
    """Advice for a pasted or uploaded distribution (nothing is stored)."""
    up = st.file_uploader("Batch sizes: one per line or size,count; vLLM --cudagraph-metrics "
                          "log or /metrics text; SGLang log", key="cap_file")
    text = st.text_area("... or paste them", key="cap_text", height=100)
    c1, c2, c3 = st.columns(3)
    engine = c1.radio("Engine", cs.ENGINES, horizontal=True, key="cap_engine")
    budget = c2.number_input("Graph memory budget (MiB)", 1.0, 1e6, 256.0, key="cap_budget")
    spec = c3.number_input("Speculative tokens", 0, 64, 0, key="cap_spec")
    choices = ca.curve_choices(data.graph_memory_runs())
    asked = st.query_params.get("curve", "")  # the Run page's link to price with a run
    start = list(choices).index(int(asked)) if asked.isdigit() and int(asked) in choices \
        else 0
    picked = st.selectbox("Priced by (a stored graph-memory run, or the built-in curve)",
                          list(choices), index=start, format_func=lambda c: choices[c],
                          key="cap_curve_run")
    curve_up = st.file_uploader("... or upload a graph-memory file (graph-memory --out)",
                                key="cap_curve")
    if up is not None:
        text = up.getvalue().decode("utf-8", "replace")
    if not text.strip():
        return
    try:
        if curve_up is not None or picked is ca.BUILT_IN:
            curve, doc = ca.curve_from_text(curve_up.getvalue().decode("utf-8", "replace")
                                            if curve_up else None)
        else:  # stored: checked on import, so only a run deleted meanwhile fails here
            doc = data.graph_memory_doc(picked)
            curve = gm.curve(doc, f"run {picked}")
        a = ca.advise_text(text, engine, budget, spec, curve)
    except (ValueError, LookupError) as e:  # a bad distribution, budget or curve; a
        st.error(plain(str(e)))  # deleted run: its one line (it may quote the upload)
        return
    st.dataframe(ca.comparison_frame(a), hide_index=True, key="cap_table")
    st.code("\n".join(a.config), language="python" if engine == "torch" else "bash",
            wrap_lines=True)
    borrowed = (ca.BORROWED,) if curve_up is None and picked is ca.BUILT_IN else ()
    for note in (*borrowed, *a.notes, f"Sizes are {a.unit}; priced by {curve.source}."):
        st.caption(plain(note))
    for i, figure in enumerate(capture_charts.curve_charts(doc) if doc else ()):
        parts.chart(figure, key=f"cap_curve_{i}")


# --- settings: ?run=ID, else the newest serve run ----------------------------------------
st.title("Serving dynamic batch sizes")
# Drawn only while open (its state in the URL, ?capture=True): closed, its uploaders and
# inputs were still sent, and a new visitor's browser fetched and drew their scripts
# (about 25 files) before the serve run's charts (bench/results/page_speed.txt). The Run
# page's "price with this curve" link (?curve=ID) opens it.
if (asked := st.query_params.get(CAPTURE)) not in (None, "True", "False"):
    st.warning(plain(f"?{CAPTURE}={asked[:80]!r} is not True or False: the capture "
                     "section starts closed."))
with st.expander("Which batch sizes to capture: vLLM, SGLang, torch.compile",
                 expanded="curve" in st.query_params, key=CAPTURE,
                 bind="query-params") as capture:
    if capture.open:
        capture_section()
runs = data.serve_runs()
if runs.empty:
    st.info("No serve run stored yet. Measure one on a GPU host, e.g. `python -m runner serve "
            "--workload mlp --strategies eager,compile,reduce-overhead,buckets:8/16/32,"
            "buckets:pow2-256 --requests 500 --batch-dist uniform:1-64`, then import it.")
    st.stop()
ids = [int(i) for i in runs["id"]]
run_id = url.run_id_from_url() if st.query_params.get_all("run") else ids[0]
if run_id not in ids:
    st.error(f"Run {run_id} is not a serve run (or does not exist): pick one below.")
    run_id = ids[0]
# The stream tells serve runs apart; their labels (often long) stand in the caption below.
names = {int(r["id"]): f"{run_choice({**r, 'kind': 'serve', 'label': None})} · "
         f"{r['batch_dist']}, {r['requests']} requests" for _, r in runs.iterrows()}
run_id = st.selectbox("Serve run", ids, index=ids.index(run_id),
                      format_func=lambda i: names[i])
st.query_params["run"] = str(run_id)

# --- load --------------------------------------------------------------------------------
try:
    (run, config), results, profile, requests = data.serve_run(run_id)
except data.RunNotFound as e:
    st.error(str(e))
    st.stop()
except Exception as e:  # noqa: BLE001 - a stored run that cannot be read: say so here
    st.error(f"Serve run {run_id} cannot be read ({type(e).__name__}); pick another run.")
    st.stop()
stream = list(config.stream)

# --- show --------------------------------------------------------------------------------
st.caption(plain(f"{run.workload} ({serve_tables.params_text(run.workload_params)}) on "
                 f"{device_name(run)}, "
                 f"torch {run.torch_version}: {config.requests} requests drawn from "
                 f"{config.batch_dist} (seed {config.seed}), status {run.status}"
                 + (f". {run.label}" if run.label else "")))
if run.status != "done":
    st.warning(f"Run status **{plain(run.status)}**: some strategies may be missing.")

st.subheader("Strategies")
summary = serve_tables.summary_table(results)
for i, columns in enumerate(serve_tables.table_parts(summary, serve_tables.SUMMARY_PARTS)):
    st.dataframe(summary, hide_index=True, key=f"summary_{i}", column_order=columns)
st.caption("Latency: one request, synchronised (a server hands its result back). Padding "
           "waste: rows computed / rows asked for - 1. Setup: compile, record or capture "
           "before the first request.")

chart = parts.spec(sc.memory_throughput_chart, results)
if chart is not None:
    parts.chart(chart, key="mem_chart")
else:
    st.info("No graph memory figures: this run had no CUDA, so no graph was captured "
            "(bucket strategies ran eagerly at their padded sizes).")

st.subheader("What padding costs: the worked example")
for line in serve_tables.example_lines(stream, results, requests):
    st.markdown(f"- {line}")
# Each bucket strategy's padding chart beside the other, stretched to its column.
waste = list(parts.spec(sc.waste_charts, serve_tables.waste_frame(stream, results)).items())
for row in range(0, len(waste), 2):
    for col, (name, figure) in zip(st.columns(2), waste[row:row + 2], strict=False):
        with col:
            parts.chart(figure, key=f"waste_chart_{name}")
latency = parts.spec(sc.latency_chart, requests)
if latency is not None:
    parts.chart(latency, key="latency_chart")

st.subheader("Bucket advisor")
if profile.empty:
    st.info("This run has no per-size profile, so the advisor has nothing to choose from.")
    st.stop()
with parts.drawn("The bucket advisor"):
    bounds = serve_tables.budget_bounds(profile)
    if bounds is None:
        budget = None
        st.caption("Graph memory is unknown on this run's device: the advisor ranks by time "
                   "alone, and on a CPU padding only ever costs.")
    else:
        lo, hi, default = bounds
        budget = st.slider("Memory budget for graph pools (MiB)", lo, hi, default, key="budget")
    advice, table = serve_tables.advice(stream, profile, results, budget, requests)
    for line in serve_tables.advice_lines(advice):
        st.markdown(line)
    for i, columns in enumerate(serve_tables.table_parts(table, serve_tables.ADVICE_PARTS)):
        st.dataframe(table, hide_index=True, key=f"advice_{i}", column_order=columns)
st.caption("Every figure of this table is the model's, but for the columns marked measured: "
           f"a row '{serve_tables.RAN_HERE}...' is a bucket set this run replayed, its "
           "modelled throughput and pool beside what the replay measured. "
           "The model: each size's measured bucket time (profile) and eager time (the "
           "eager replay, else the profile), weighted by how often the stream asked for it; "
           "pool = the largest graph alone plus what each smaller one added in a shared "
           "pool. Plans within 5% of the best are ties, decided as said above. The 'ran here' "
           "rows show how close the model lands.")
