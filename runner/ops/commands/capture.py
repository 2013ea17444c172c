"""`advise-capture` (which batch sizes to capture, from a real distribution, priced in MiB)
and `graph-memory` (measure the curve the advice is priced by; GPU).

advise-capture reads files (and, for --curve RUN_ID, the database) and prints; it stores
nothing. graph-memory stores its run as a run of kind graph-memory (the database and/or
a bundle with --out), which advise-capture --curve reads by id or file. torch is imported
inside graph-memory's run() only: the parser imports this module everywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import uuid
from typing import Any, overload

from contract import bundle as fmt
from contract import capture_dist as cdist
from contract import capture_sizes as cs
from contract import graph_memory as gm
from contract import outfile
from contract.capture_advisor import advise
from contract.run_record import Run
from runner.ops.cli import UsageError
from runner.ops.commands import flags
from runner.ops.commands.measured import MeasuringCommand, RunFailed, Storage
from runner.ops.commands.sweep import parse_label, parse_params

DEFAULT_SIZES = "1,2,4,8,16,32,64,128,256,512"


def register(sub) -> None:
    a = sub.add_parser(
        "advise-capture", help="pick CUDA graph capture sizes for vLLM, SGLang or torch."
                               "compile from a real batch-size distribution",
        description="Read a batch-size distribution (sizes one per line or size,count; "
                    "vLLM's --cudagraph-metrics log; vLLM's Prometheus text with "
                    "vllm:iteration_tokens_total; SGLang's 'Decode batch' log lines) and "
                    "propose a capture list within a graph-memory budget, priced by a "
                    "curve, beside the engine's default list. Stores nothing.")
    a.add_argument("--from", dest="source", required=True, metavar="FILE",
                   help="the distribution file")
    a.add_argument("--format", default="auto", choices=cdist.FORMATS,
                   help="how to read it (default: recognised from its lines)")
    a.add_argument("--engine", required=True, choices=cs.ENGINES)
    a.add_argument("--budget-mib", metavar="N", help="graph memory budget in MiB")
    a.add_argument("--budget-kv-tokens", metavar="N",
                   help="the budget as KV-cache tokens given up (with --kv-bytes-per-token)")
    a.add_argument("--kv-bytes-per-token", metavar="B",
                   help="KV-cache bytes per token (2 x layers x kv heads x head dim x dtype "
                        "bytes)")
    a.add_argument("--curve", metavar="RUN_ID|FILE", help="a graph-memory run: its id in "
                   "the database, or its file (graph-memory --out, export); default: the "
                   "shipped H200 mlp figures")
    a.add_argument("--workload", metavar="NAME",
                   help="the served model's workload (e.g. hf-causal-lm): price by the "
                        "newest stored graph-memory run of it; without one, the built-in "
                        "curve is borrowed and the advice says so")
    a.add_argument("--db", metavar="URL",
                   help=f"for --curve RUN_ID and --workload: {flags.DB_HELP}")
    a.add_argument("--cover", default="1", metavar="Q",
                   help="share of batches the largest size must hold (default 1: all)")
    a.add_argument("--max-graphs", default=str(cs.MAX_GRAPHS), metavar="N")
    a.add_argument("--tolerance", default="0.01", metavar="F",
                   help="padding waste (as a fraction) traded for fewer graphs: the fewest "
                        "graphs within F of the least padding that fits (default 0.01)")
    a.add_argument("--spec-tokens", default="0", metavar="K", help="speculative tokens")
    a.add_argument("--tp", default="1", metavar="N", help="tensor-parallel degree")
    a.add_argument("--sequence-parallel", action="store_true",
                   help="vLLM sequence parallelism is on (sizes multiples of --tp)")
    a.add_argument("--max-num-seqs", default="256", metavar="N",
                   help="vLLM: sets its default list (default 256)")
    a.add_argument("--max-num-batched-tokens", metavar="N", help="vLLM: no graph above it")
    a.add_argument("--gpu-mem-gib", metavar="G", help="SGLang: picks its default tier")
    a.add_argument("--json", action="store_true", help="print the advice as JSON")
    a.set_defaults(func=run_advise)
    _register_graph_memory(sub)


def _register_graph_memory(sub) -> None:
    g = sub.add_parser(
        "graph-memory", help="measure graph memory per captured size (GPU)",
        description="Capture one CUDA graph per size, largest first, into one shared pool "
                    "and/or private pools; record each pool's reserved and allocated bytes "
                    "and the capture seconds after every capture; attribute the "
                    "per-capture fixed part (workspaces) and the per-size part "
                    "(activations). Stores the run (kind graph-memory) in the database "
                    "and/or a bundle (--out); advise-capture --curve takes its id or file.",
        parents=[flags.workload_flags("built-in workload (mlp) or module.path:factory",
                                      "must be cuda"),
                 flags.storage_flags("write only the --out bundle")])
    g.add_argument("--sizes", default=DEFAULT_SIZES, metavar="LIST",
                   help=f"comma-separated batch sizes (default {DEFAULT_SIZES})")
    g.add_argument("--pool", default="both", choices=("shared", "private", "both"))
    g.set_defaults(func=run_graph_memory)


# A flag's text (argparse gives str, or None when the flag has no default and was not
# given): None stays None, so the checker sees an int wherever a default is set.
@overload
def _int(text: str, flag: str, lo: int = 1, hi: int = 1 << 40) -> int: ...
@overload
def _int(text: None, flag: str, lo: int = 1, hi: int = 1 << 40) -> None: ...
def _int(text: str | None, flag: str, lo: int = 1, hi: int = 1 << 40) -> int | None:
    if text is None:
        return None
    t = text.strip()
    if not t.isdigit() or not lo <= int(t) <= hi:
        raise UsageError(f"{flag}: {text!r} is not a whole number from {lo} to {hi}")
    return int(t)


@overload
def _float(text: str, flag: str, lo: float, hi: float) -> float: ...
@overload
def _float(text: None, flag: str, lo: float, hi: float) -> None: ...
def _float(text: str | None, flag: str, lo: float, hi: float) -> float | None:
    if text is None:
        return None
    try:
        v = float(text)
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is not a number") from None
    if not lo <= v <= hi:
        raise UsageError(f"{flag}: {text} is out of range ({lo:g} to {hi:g})")
    return v


def _budget(args) -> int:
    if args.budget_mib is not None:
        if args.budget_kv_tokens is not None:
            raise UsageError("--budget-mib and --budget-kv-tokens: give one of them")
        mib = _float(args.budget_mib, "--budget-mib", 0.0, 1e7)
        return int(mib * cs.MIB)
    if args.budget_kv_tokens is None:
        raise UsageError("no budget: give --budget-mib N, or --budget-kv-tokens N with "
                         "--kv-bytes-per-token B")
    tokens = _int(args.budget_kv_tokens, "--budget-kv-tokens")
    per = _int(args.kv_bytes_per_token, "--kv-bytes-per-token") \
        if args.kv_bytes_per_token is not None else None
    if per is None:
        raise UsageError("--budget-kv-tokens needs --kv-bytes-per-token")
    return tokens * per


def load_curve(ref: str | None, db: str | None = None) -> cs.Curve:
    """The default curve, a graph-memory file, or a stored graph-memory run by id (an
    existing file of that name wins: a file called 12 is read as a file)."""
    if ref is None:
        return cs.DEFAULT_CURVE
    if ref.strip().isdigit() and not os.path.exists(ref):
        return _stored_curve(ref, db)
    try:
        with open(ref, encoding="utf-8") as f:
            doc = json.load(f, object_pairs_hook=fmt.unique_keys)
    except FileNotFoundError:
        raise UsageError(f"--curve {ref!r} is neither a run id nor a file that "
                         "exists") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"--curve {ref!r} cannot be read: {e}") from None
    try:
        return gm.curve(fmt.graph_memory_doc(doc, ref), ref)
    except gm.GraphMemoryError as e:
        raise UsageError(f"--curve {e}") from None


def choose_curve(ref: str | None, db: str | None, workload: str | None
                 ) -> tuple[cs.Curve, str | None]:
    """The curve advice is priced by, and the one line that says whose it is when it is
    not the served workload's own: --curve wins; else the newest stored graph-memory run
    of --workload; else the built-in curve, borrowed (issue 38: the vLLM/SGLang advice
    was priced by the tiny mlp's curve without a word)."""
    if ref is not None:
        return load_curve(ref, db), None
    if workload is None:
        return cs.DEFAULT_CURVE, ("curve borrowed: no --workload given, so the built-in "
                                  "one (a tiny model's) prices it; give --workload NAME or "
                                  "--curve for your model's")
    name = workload.strip()
    if not name or len(name) > 200 or not name.isprintable():
        raise UsageError(f"--workload {workload!r}: give a workload name, e.g. hf-causal-lm")
    run_id = _newest_graph_memory_run(name, db)
    if run_id is not None:
        return _stored_curve(str(run_id), db), None
    return cs.DEFAULT_CURVE, (f"curve borrowed: no graph-memory run of {name} stored, so "
                              "the built-in one (a tiny model's) prices it; measure yours: "
                              f"python -m runner graph-memory --workload {shlex.quote(name)}")


def _newest_graph_memory_run(workload: str, db: str | None) -> int | None:
    """The id of the newest graph-memory run of `workload` in the database; None where
    there is none, or no database (the local SQLite file not made yet)."""
    from runner.ops.commands.store import open_engine, sqlalchemy_available

    if not sqlalchemy_available():
        return None
    from db.engine import DatabaseError

    try:
        engine = open_engine(db, must_exist=True)
    except DatabaseError:
        if db is not None:
            raise
        return None  # no local database yet: nothing stored, the built-in is borrowed
    try:
        from db.queries import list_runs

        for r in list_runs(engine):  # newest first
            if r.header.kind == "graph-memory" and r.header.workload == workload:
                return r.header.id
        return None
    finally:
        engine.dispose()


def _stored_curve(ref: str, db: str | None) -> cs.Curve:
    from runner.ops.commands.store import open_engine, parse_run_id

    run_id = parse_run_id(ref)
    engine = open_engine(db, must_exist=True)
    try:
        from db.graph_memory import NotGraphMemory, graph_memory_doc
        from db.store import RunNotFound

        try:
            return gm.curve(graph_memory_doc(engine, run_id), f"run {run_id}")
        except (RunNotFound, NotGraphMemory) as e:
            raise UsageError(f"--curve {ref}: {e}") from None
        except gm.GraphMemoryError as e:
            raise UsageError(f"--curve {e}") from None
    finally:
        engine.dispose()


def _pct(v: float) -> str:
    return f"{v:.1%}"


def format_advice(a, curve: cs.Curve) -> list[str]:
    def row(name, p):
        return [name, str(len(p.sizes)), str(p.sizes[-1]) if p.sizes else "-",
                _pct(p.padding_waste), _pct(p.graphless_share), f"{p.pool_mib:.1f}",
                f"{p.capture_s:.2f}"]

    head = ["list", "graphs", "largest", "padding", "no graph", "pool MiB", "capture s"]
    lines = [f"{a.engine}: sizes are {a.unit}; budget {a.budget_bytes / cs.MIB:.1f} MiB; "
             f"priced by {curve.source}"]
    lines += [f"note: {n}" for n in a.notes]
    lines += flags.table([head, row("proposed", a.proposed), row("default", a.default)],
                         left=(0,))
    lines.append(f"default = {a.default_label}")
    lines.append(f"proposed sizes: {', '.join(map(str, a.proposed.sizes))}")
    lines.append("paste:")
    lines += [f"  {c}" for c in a.config]
    return lines


def run_advise(args: argparse.Namespace) -> int:
    budget = _budget(args)
    curve, borrowed = choose_curve(args.curve, args.db, args.workload)
    rules = cs.EngineRules(
        args.engine, spec_tokens=_int(args.spec_tokens, "--spec-tokens", 0, 64),
        tp=_int(args.tp, "--tp", 1, 1024), sequence_parallel=args.sequence_parallel,
        max_num_seqs=_int(args.max_num_seqs, "--max-num-seqs", 1, 1 << 20),
        max_num_batched_tokens=_int(args.max_num_batched_tokens, "--max-num-batched-tokens"),
        gpu_mem_gib=_float(args.gpu_mem_gib, "--gpu-mem-gib", 1.0, 1e5))
    try:
        dist = cdist.read_file(args.source, args.format)
        a = advise(dist, rules, curve, budget,
                   cover=_float(args.cover, "--cover", 1e-9, 1.0),
                   max_graphs=_int(args.max_graphs, "--max-graphs", 1, cs.MAX_GRAPHS),
                   tolerance=_float(args.tolerance, "--tolerance", 0.0, 10.0))
    except (cdist.DistError, cs.AdviceError) as e:
        raise UsageError(str(e)) from None
    if args.json:
        def priced(p):
            return {"sizes": list(p.sizes), "padding_waste": p.padding_waste,
                    "graphless_share": p.graphless_share, "pool_mib": p.pool_mib,
                    "capture_s": p.capture_s}
        print(json.dumps({"engine": a.engine, "unit": a.unit, "budget_mib":
                          a.budget_bytes / cs.MIB, "curve": curve.source,
                          "proposed": priced(a.proposed), "default": priced(a.default),
                          "curve_borrowed": borrowed,
                          "config": list(a.config), "notes": list(a.notes)}, indent=1))
    else:
        lines = format_advice(a, curve)
        if borrowed:
            lines.insert(1, f"note: {borrowed}")
        print("\n".join(lines))
    return 0


class GraphMemory(MeasuringCommand):
    # A series is measured whole before anything is stored: a failed capture leaves no
    # run behind, and no database file either.
    writes_as_it_goes = False

    def parse(self, args: argparse.Namespace) -> None:
        self.params = parse_params(args.param)
        self.label = parse_label(args.label)
        try:
            self.sizes = gm.parse_sizes(args.sizes)
        except gm.GraphMemoryError as e:
            raise UsageError(str(e)) from None

    def resolve(self, args: argparse.Namespace, storage: Storage) -> None:
        # Storage.from_args ran first: bad --db / --out fail before any capture.
        if args.device == "cpu":
            raise UsageError("--device cpu: graph-memory captures CUDA graphs and needs cuda")
        try:
            import torch
        except ImportError:
            raise UsageError("graph-memory needs torch, which is not installed here") from None
        if not torch.cuda.is_available():
            raise UsageError(f"graph-memory needs CUDA, which is not available here (torch "
                             f"{torch.__version__})")

        from runner.core.graph_memory import not_capturable
        from runner.core.workloads import resolve

        self.workload = resolve(args.workload, self.params)
        self.pool = args.pool
        self.model, self.make_input = self.workload.build("cuda")
        reason = not_capturable(self.model, self.workload.name)
        if reason:
            raise UsageError(f"graph-memory: {reason}")

    def run(self, engine: Any, storage: Storage) -> str:
        from runner.core import environment
        from runner.core.graph_memory import capture_series

        workload, params, sizes = self.workload, self.params, self.sizes
        model, make_input = self.model, self.make_input
        pools = ("shared", "private") if self.pool == "both" else (self.pool,)
        cmd = shlex.join(["python", "-m", "runner", "graph-memory", "--workload",
                          workload.name, "--sizes", ",".join(map(str, sorted(sizes))),
                          "--pool", self.pool,
                          *sum((["--param", f"{k}={v}"] for k, v in params.items()), [])])
        run = Run(uuid=str(uuid.uuid4()), kind="graph-memory", workload=workload.name,
                  workload_params=dict(workload.params), dtype=workload.dtype,
                  created_at=fmt.now_iso(), label=self.label, command=cmd)
        try:
            series = {p: capture_series(model, make_input, sizes, p, "cuda",
                                        lambda m: print(m, file=sys.stderr, flush=True))
                      for p in pools}
        except (RuntimeError, TypeError, ValueError) as e:  # OOM, a capture error: no run
            first = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
            raise RunFailed(f"graph-memory: capture failed, nothing written: {first}"
                            ) from None
        run = run.finished("done", fmt.now_iso())
        self.doc = fmt.validate(fmt.make_bundle(environment.capture("cuda").to_json(),
                                                run.to_json(), [],
                                                graph_memory=gm.make_section(sizes, series)))
        return "done"

    def report(self, status: str, engine: Any, storage: Storage) -> None:
        print_run(gm.doc_from_bundle(self.doc, "this run"))
        store_run(self.doc, storage)


def run_graph_memory(args: argparse.Namespace) -> int:
    return GraphMemory().main(args)


def print_run(doc: gm.GraphMemoryDoc) -> None:
    """The captures as a table, then the attribution."""
    head = ["pool", "graphs", "size", "pool MiB", "+MiB", "device MiB", "capture s"]
    body = [[r["pool"], str(r["graphs"]), str(r["batch_size"]), f"{r['pool_mib']:.1f}",
             f"{r['marginal_mib']:.1f}", f"{r['device_mib']:.1f}", f"{r['capture_s']:.3f}"]
            for r in gm.table_rows(doc)]
    print("\n".join(flags.table([head, *body], left=(0,))))
    print(json.dumps(doc["attribution"], indent=1))


def store_run(doc: fmt.Bundle, storage: Storage) -> None:
    """The bundle first (a file cannot half-fail the database), then the database last:
    opening a valid URL creates the file."""
    if storage.out:
        fmt.write(storage.out, doc)
        print(f"graph-memory run written to {outfile.shown(storage.out)}")
    if storage.use_db:
        from runner.ops.commands.store import import_one, open_engine, shown_url

        engine = open_engine(storage.db)
        try:
            run_id, _ = import_one(engine, doc, storage.out or "this run")
        finally:
            engine.dispose()
        print(f"graph-memory run {run_id} stored in {shown_url(str(engine.url))} (uuid "
              f"{doc['run']['uuid']}); price advice with it: advise-capture --curve "
              f"{run_id}")
