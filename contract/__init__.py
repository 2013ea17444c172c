"""The contract every other part imports: records, formats and rules, free of torch and
of the database.

- vocabularies and limits: vocab (modes and their facts, statuses, stop reasons, presets
  by name), metrics (each figure's label, unit, direction), limits (each stated once),
  numbers (percentile, NaN -> None);
- what to measure: catalog, params and model_catalog (the workloads and their typed
  parameters), specs (SweepSpec, ServeSpec and the one function that checks each);
- the records and the result file: measurement (one point, typed; JSON only at its
  edge), trace (one profiled step), energy, bundle (the format, its versions and its
  checks; docs/ARCHITECTURE.md, "The result bundle"), serve_record and graph_memory (the
  bundle's sections for those run kinds), queue (a job, a worker, a job's progress),
  run_summary (a stored run as `runner list` shows it), point_text (the point in flight
  as text, and back);
- pure rules and models the runner and the dashboard share: verdict (when a speedup is a
  finding), buckets and advisor (serve inputs and the bucket cost model), capture_sizes,
  capture_dist and capture_advisor (which batch sizes to capture, from a real
  distribution, priced by a graph-memory curve).

Standard library only; nothing here imports anything of ours outside contract/.
"""
