"""The pages' Streamlit views: the frame (frame.py), URL parameters, the parts every page
repeats, and the views one page draws. A page script (pages/run.py, ...) lays them out.

data.py is the one door to the database: it alone imports db/ and sqlalchemy, holds the
cached engine and the st.cache wrappers over db/'s queries and writes. Every other module
here may import streamlit, pages/logic/, pages/charts/ and contract/, and reads or
writes stored data only through data.py (tests/test_import_rules.py holds it to that)."""
