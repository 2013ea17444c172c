"""Tests of the dashboard's pages, laid out like pages/: the page scripts (with their
widgets) through AppTest here, pages/logic/'s and pages/charts/'s modules as plain
functions in logic/ and charts/."""
