"""Tests of the dashboard's pages and pages/common/, through AppTest and as plain functions."""
