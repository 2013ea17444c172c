"""The pages' logic, in plain Python: the tables, words, key figures, advice reading,
link and form checks a page shows, as functions of the records the door
(pages/widgets/data.py) hands over (the serve tables and runner/history's change points
still read frames). The rules themselves are the contract's (contract/speedups.py,
memory.py, noise.py...): none is computed again here. A table's frame is made at its
end. Unit-tested without a browser.

May import: contract/, pandas, numpy and the standard library. Never
streamlit, altair, db/ or sqlalchemy (tests/test_import_rules.py holds it to that)."""
