"""launchbench dashboard: the frame. `streamlit run app.py`

Navigation over the pages (their URL paths are the share-link contract of DESIGN.md), the
shared sidebar, the cached engine, and first-start seeding of an empty database. Each page
is a script under pages/: settings -> load (db/ functions) -> show.
"""

from pathlib import Path

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

from db.engine import DatabaseError
from pages.common import ui

HERE = Path(__file__).resolve().parent

# (file, title, icon, url path, in the menu). The first is the default page at "/". The
# run page needs ?run=ID, so it is reached through links, not the menu. launch and serve
# come from other parts of the project and appear once their files exist.
PAGES = (
    ("pages/runs.py", "Runs", ":material/list:", "", True),
    ("pages/run.py", "Run", ":material/monitoring:", "run", False),
    ("pages/compare.py", "Compare", ":material/compare_arrows:", "compare", True),
    ("pages/launch.py", "Launch", ":material/rocket_launch:", "launch", True),
    ("pages/serve.py", "Serve", ":material/dynamic_feed:", "serve", True),
    ("pages/import_export.py", "Import / export", ":material/swap_vert:", "import", True),
)

st.set_page_config(page_title="launchbench", page_icon=":material/timer:", layout="wide")

nav = st.navigation([
    st.Page(HERE / file, title=title, icon=icon, default=True) if not path else
    st.Page(HERE / file, title=title, icon=icon, url_path=path,
            visibility="visible" if listed else "hidden")
    for file, title, icon, path, listed in PAGES if (HERE / file).is_file()
])

with st.sidebar:
    st.caption("What CUDA Graphs buy, per model, GPU and batch size, and what they cost "
               "in memory.")
    st.caption(f"Database: `{ui.shown_url()}`")
    if ui.read_only():
        st.badge("read-only share mode", icon=":material/lock:", color="orange")

try:
    ui.engine()
    seeded = ui.seed()
except DatabaseError as e:
    st.error(f"{e}. Set LAUNCHBENCH_DB to a usable database URL and restart.")
    st.stop()

with st.sidebar:
    if seeded.imported:
        st.caption(f"First start: imported {len(seeded.imported)} sample run(s).")
    for line in seeded.errors:
        st.warning(f"Sample not imported: {line}")

try:
    nav.run()
except SQLAlchemyError as e:
    # A database that goes away mid-session (server restart, file removed): one line.
    first = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
    st.error(f"The database {ui.shown_url()} failed: {first}. Reload the page to retry.")
