"""Operations: what runs the measuring core for a user and puts its results somewhere.
The command line (cli.py, one module per command under commands/), the worker that claims
queued jobs (worker.py), where a sweep's points go (sinks.py), progress on the terminal
(progress.py), a local worker started from the dashboard (launcher.py), the Slurm
executor (slurm.py), one worker per GPU of a host (host.py).

The runner's top floor: may import runner/core/, runner/serve/, contract/ and db/.
db/ and SQLAlchemy are imported inside functions where a command runs without them (a
GPU host with torch alone still writes a bundle). pages/ may import launcher.py and
slurm.py only, and those two import nothing of ours but db/, contract/ and (slurm)
the launcher.
"""
