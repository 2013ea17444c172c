"""Tests of the dashboard's pages and their modules (pages/logic, pages/charts,
pages/widgets), through AppTest and as plain functions."""
