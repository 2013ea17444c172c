"""The pages' figures: Altair chart builders from the frames and records pages/logic/
returns, and the static reports (HTML with the charts inline, PNG/SVG) laid out from
them. A builder returns a chart, or None when there is nothing to draw.

May import: pages/logic/, contract/, altair, vl_convert, jinja2, pandas. Never
streamlit, db/ or sqlalchemy (tests/test_import_rules.py holds it to that)."""
