"""Tests of pages/charts/: the Vega-Lite specs and the reports."""
