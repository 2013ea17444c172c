"""The pages' logic, in plain Python: the tables, verdicts, key figures, advice reading,
link and form checks a page shows, as functions of the frames and records the door
(pages/widgets/data.py) hands over. Unit-tested without a browser.

May import: contract/, pandas, numpy and the standard library. Never
streamlit, altair, db/ or sqlalchemy (tests/test_import_rules.py holds it to that)."""
