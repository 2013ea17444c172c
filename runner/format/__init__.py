"""The leaf every other part imports: the contracts, free of torch and of the database.

vocab (modes and their facts, statuses, stop reasons, metrics), limits (each stated
once), numbers (percentile, NaN -> None), catalog (the workloads'
parameters), specs (SweepSpec, ServeSpec and the one function that checks each), bundle
and serve_record (the result file), buckets and advisor (serve inputs and the pure cost
model the runner and the dashboard share), trace (one profiled step), verdict (when a
speedup is a finding), point_text (the point in flight as text, and back), queue (a
job, a worker, a job's progress as the queue hands them out), run_summary (a stored run
as `runner list` shows it). Standard
library only; nothing here imports anything of ours outside runner/format/.
"""
