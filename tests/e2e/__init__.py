"""The dashboard in a real browser: chromium through Playwright against streamlit run app.py."""
