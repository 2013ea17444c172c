"""Tests of pages/logic/: plain functions over records, no browser."""
