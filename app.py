"""launchbench dashboard: the frame. `streamlit run app.py`

Navigation over the pages (their URL paths: docs/ARCHITECTURE.md, "A shared link to a page"), the
shared sidebar, the cached engine, and first-start seeding of an empty database. Each page
is a script under pages/: settings -> load (db/ functions) -> show.
"""

from pathlib import Path

import streamlit as st

from pages.logic import links
from pages.widgets import data, frame

HERE = Path(__file__).resolve().parent

# The favicon is a file shipped here: a material icon or an emoji as page_icon makes the
# browser fetch the image from a CDN, which fails offline.
FAVICON = HERE / "static" / "favicon.png"
st.set_page_config(page_title="launchbench", page_icon=str(FAVICON), layout="wide")
# Streamlit's wide layout leaves 6rem above the title for its toolbar, which "viewer" mode
# keeps small: 3.5rem clears it and lifts every page's first chart 40 px nearer the top,
# where the Run page's answer and its first chart fit on the first screen at 1280x800
# (tests/e2e/test_run_figures.py). A style-only st.html takes no room on the page.
st.html("<style>[data-testid='stMainBlockContainer']{padding-top:3.5rem}</style>")

# The pages table lives in pages.logic.links (pages link to each other through it). The
# page at url path "" is the default page at "/"; every page of the table has its file
# here (launch and serve included), and one that is missing (a trimmed install) is left
# out of the menu rather than breaking it.
nav = st.navigation([
    st.Page(HERE / p.file, title=p.title, icon=p.icon, default=True) if not p.url_path else
    st.Page(HERE / p.file, title=p.title, icon=p.icon, url_path=p.url_path,
            visibility="visible" if p.listed else "hidden")
    for p in links.PAGES.values() if (HERE / p.file).is_file()
])

with st.sidebar:
    st.caption("What CUDA Graphs buy, per model, GPU and batch size, and what they cost "
               "in memory.")
    st.caption(f"Database: `{data.shown_url()}`")
    if data.read_only():
        st.badge("read-only share mode", icon=":material/lock:", color="orange")

try:
    data.engine()
    seeded = data.seed()
except data.DatabaseError as e:
    st.error(f"{e}. {e.advice}")
    st.stop()

with st.sidebar:
    if seeded.imported:
        st.caption(f"First start: imported {len(seeded.imported)} sample run(s).")
    for line in seeded.errors:
        st.warning(f"Sample not imported: {line}")

missing = frame.asked_page()
if missing:
    frame.no_such_page(missing)
    st.stop()

try:
    nav.run()
except data.SQLAlchemyError as e:
    # A database that goes away mid-session (server restart, file removed): one line.
    first = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
    st.error(f"The database {data.shown_url()} failed: {first}. Reload the page to retry.")
