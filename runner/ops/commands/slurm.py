"""`slurm-script JOB`: the sbatch script the slurm executor submits for a job.

For an admin to read, or to submit by hand from a login node (`... | sbatch`, with
LAUNCHBENCH_DB exported): the worker it runs records its own Slurm job id when it claims.
"""

from __future__ import annotations

import argparse

from runner.ops.cli import UsageError
from runner.ops.commands import flags
from runner.ops.commands.jobs import _engine, _known


def register(sub) -> None:
    p = sub.add_parser("slurm-script", help="print the sbatch script for a queued job",
                       description="Print the sbatch script the slurm executor submits for "
                                   "JOB (settings from $LAUNCHBENCH_SLURM_CONFIG, else "
                                   "slurm.toml).",
                       parents=[flags.db_flag()])
    p.add_argument("job", metavar="JOB", help="job id (see `jobs`)")
    p.add_argument("--gpu-type", metavar="TYPE",
                   help="GPU type from the Slurm config (default: the job's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from db import jobs
    from runner.ops import slurm

    if not args.job.isdigit() or int(args.job) < 1:
        raise UsageError(f"job id {args.job!r} is not a positive whole number")
    config = _known(slurm.load_config)
    engine = _engine(args.db, must_exist=True)
    try:
        job = _known(jobs.get_job, engine, int(args.job))
    finally:
        engine.dispose()
    gpu_type = args.gpu_type or job.get("gpu_type")
    if gpu_type is None:
        raise UsageError(f"job {job['id']} has no GPU type: give --gpu-type (configured: "
                         f"{', '.join(config.gpu_types)})")
    print(_known(slurm.script, {**job, "gpu_type": gpu_type}, config), end="")
    return 0
