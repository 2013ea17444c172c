"""`workers`: the live workers by host, or (`--per-gpu`) one worker per visible GPU here.

Also the host flags `worker` takes (--gpu, --cpus, --host-policy, --host-lock-dir) and
what they do before torch is imported: pin the process, install the host gate
(runner/core/host_gate.py) and export it to the `--processes` children.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from contract.queue import Worker
from runner.core import host_gate
from runner.ops import host
from runner.ops.cli import UsageError
from runner.ops.commands import flags

POLICY_HELP = ("exclusive: a host-wide lock, two workers on this host never time at once "
               "(compile and capture still overlap); shared: no lock, each point records "
               "how many other workers were timing and is flagged 'host shared' "
               f"(default: ${host_gate.POLICY_VAR}, else {host_gate.DEFAULT_POLICY})")
DIR_HELP = ("host-local directory of the timing lock and the registry of who is timing "
            f"(default: ${host_gate.DIR_VAR}, else {host_gate.default_dir()})")


def _policy_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host-policy", choices=host_gate.POLICIES, metavar="POLICY",
                   help=POLICY_HELP)
    p.add_argument("--host-lock-dir", metavar="DIR", help=DIR_HELP)


def host_flags() -> argparse.ArgumentParser:
    """`worker`'s host flags (a parent parser)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--gpu", type=int, metavar="N",
                   help="pin to GPU N (nvidia-smi's index): CUDA_VISIBLE_DEVICES=N, in bus "
                        "order; recorded as this worker's slot on its host")
    p.add_argument("--cpus", metavar="LIST",
                   help="pin to these CPUs, e.g. 0-47,96-143 (workers --per-gpu --pin-cpus "
                        "passes the GPU's NUMA node)")
    _policy_flags(p)
    return p


def register(sub) -> None:
    p = sub.add_parser("workers", help="live workers by host; --per-gpu starts one per GPU",
                       description="Without --per-gpu: the live workers, grouped by host. "
                                   "With --per-gpu: start one worker per visible GPU here, "
                                   "named <host>-gpu<N>, each pinned to its GPU; Ctrl-C or "
                                   "SIGTERM stops them all.",
                       parents=[flags.db_flag()])
    p.add_argument("--per-gpu", action="store_true",
                   help="start one worker per visible GPU (CUDA_VISIBLE_DEVICES, else "
                        "nvidia-smi -L)")
    p.add_argument("--gpus", metavar="LIST", help="with --per-gpu: only these GPUs, e.g. 0-3")
    p.add_argument("--pin-cpus", action="store_true",
                   help="with --per-gpu: pin each worker to its GPU's NUMA node's CPUs "
                        "(from nvidia-smi topo -m)")
    p.add_argument("--idle-exit", type=float, metavar="SECONDS",
                   help="with --per-gpu: passed to each worker")
    _policy_flags(p)
    p.add_argument("--worker-command", metavar="CMD", help=argparse.SUPPRESS)  # tests
    p.set_defaults(func=run_workers)


def policy_of(args: argparse.Namespace) -> tuple[str, str | None]:
    """The policy and lock directory the flags and the environment say, checked."""
    policy = args.host_policy or os.environ.get(host_gate.POLICY_VAR) or host_gate.DEFAULT_POLICY
    directory = args.host_lock_dir or os.environ.get(host_gate.DIR_VAR) or None
    try:
        host_gate.check_policy(policy)
        if directory is not None:
            host_gate.check_dir(directory)
    except host_gate.HostGateError as e:
        raise UsageError(str(e)) from None
    return policy, directory


def apply(args: argparse.Namespace) -> dict:
    """`worker`: pin, install the gate (inherited by `--processes` children through the
    environment); returns the worker-table fields that say so. Before torch is imported."""
    if args.gpu is not None and not 0 <= args.gpu <= 4095:
        raise UsageError(f"--gpu {args.gpu} must be a GPU index from 0 to 4095")
    policy, directory = policy_of(args)
    try:
        fields = host.pin(args.gpu, args.cpus)
    except host.HostError as e:
        raise UsageError(str(e)) from None
    os.environ.update(host_gate.export(policy, directory))
    host_gate.install(host_gate.Gate(policy, directory))
    return {**fields, "host_policy": policy}


def run_workers(args: argparse.Namespace) -> int:
    if not args.per_gpu:
        for flag, given in (("--gpus", args.gpus), ("--pin-cpus", args.pin_cpus or None),
                            ("--idle-exit", args.idle_exit),
                            ("--host-policy", args.host_policy),
                            ("--host-lock-dir", args.host_lock_dir)):
            if given is not None:
                raise UsageError(f"{flag} needs --per-gpu (without it, workers lists)")
        return _list(args)
    if args.idle_exit is not None and not 0 <= args.idle_exit <= 7 * 24 * 3600:
        raise UsageError(f"--idle-exit {args.idle_exit:g} must be from 0 to 604800 seconds")
    policy, directory = policy_of(args)
    try:
        gpus = host.parse_gpus(args.gpus) if args.gpus is not None else None
        entries = host.plan(gpus, pin_cpus=args.pin_cpus)
    except host.HostError as e:
        raise UsageError(str(e)) from None
    base = (shlex.split(args.worker_command) if args.worker_command
            else [sys.executable, "-m", "runner", "worker"])
    passthrough = ["--host-policy", policy]
    if directory is not None:
        passthrough += ["--host-lock-dir", directory]
    if args.db is not None:
        passthrough += ["--db", args.db]
    if args.idle_exit is not None:
        passthrough += ["--idle-exit", f"{args.idle_exit:g}"]
    return host.run_per_gpu(entries, base, passthrough,
                            log=lambda line: print(line, file=sys.stderr, flush=True))


def announce(engine, me: Worker, log) -> None:
    """A starting worker says who shares its host (the workers table)."""
    from db import hosts, jobs

    here = [w for w in jobs.live_workers(engine) if w.hostname == me.hostname]
    if here and me.hostname is not None:  # a registered worker always has its host's
        log(hosts.describe(me.hostname, here))
    mixed = hosts.mixed_policies(here)
    if mixed:
        log(f"warning: workers on this host time under different policies ({', '.join(mixed)})"
            ": the shared ones time beside the exclusive ones")


def format_worker(w: Worker) -> str:
    slot = f"gpu{w.host_slot}" if w.host_slot is not None else "-"
    return "  ".join([f"{w.id:>5}", f"{w.name:<24}", f"{slot:<6}",
                      f"pid={w.pid}", w.gpu_name or "no CUDA",
                      f"CUDA_VISIBLE_DEVICES={w.cuda_visible_devices or 'all'}",
                      f"cpus={w.cpus or '?'}"])


def _list(args: argparse.Namespace) -> int:
    from db import hosts, jobs
    from runner.ops.commands.store import open_engine

    engine = open_engine(args.db, must_exist=True)
    try:
        workers = jobs.live_workers(engine)
    finally:
        engine.dispose()
    if not workers:
        print("no live workers", file=sys.stderr)
    for name, group in hosts.by_host(workers).items():
        print(hosts.describe(name, group))
        for w in group:
            print("  " + format_worker(w))
    return 0
