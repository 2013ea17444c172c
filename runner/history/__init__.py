"""The history of stored runs (issue 40): the figure each point of a run is judged on, a
series of runs ordered by torch version, date or run order, the change points along it
(through the `ruptures` library), and one run checked against a baseline run.

A room of its own because both sides need it: the `check` command (runner/ops/) and the
Trends page (pages/logic/). It stands on the contract (contract/) and third-party
packages only (pandas, numpy, ruptures): it may import nothing else of ours, and never
torch, the database or Streamlit.
"""
