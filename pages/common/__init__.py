"""Logic the dashboard pages share. Everything here but `ui` is free of streamlit, so it is
tested as plain functions; `ui` is the one thin streamlit helper module."""
