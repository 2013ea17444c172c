"""`python -m runner serve`: replay a stream of requests of varying batch size under each
strategy (eager, compile, reduce-overhead, bucketed CUDA graphs) and store the run.

Every flag is checked, and the model built, before anything is written. torch and the
database layer are imported inside run(): the parser imports this module everywhere.
"""

from __future__ import annotations

import argparse
import copy
import shlex
import sys
from typing import Any

from contract import bundle as fmt
from contract import outfile
from contract.buckets import ServeInputError
from contract.limits import MAX_REQUESTS
from contract.run_record import Environment, Run
from contract.serve_record import ServeConfig, ServeProfilePoint, ServeResult, ServeSection
from contract.specs import SpecError, check_serve
from runner.ops.cli import UsageError
from runner.ops.commands import flags
from runner.ops.commands.measured import MeasuringCommand, Storage
from runner.ops.commands.sweep import parse_label, parse_params

DEFAULT_STRATEGIES = "eager,compile,reduce-overhead,buckets:8/16/32,buckets:pow2-256"


def register(sub) -> None:
    p = sub.add_parser(
        "serve", help="replay requests of varying batch size under each strategy",
        description="Replay a reproducible stream of requests whose batch sizes follow a "
                    "distribution, under each strategy: eager, compile, reduce-overhead "
                    "(a graph per new size), buckets:SIZES (one CUDA graph per bucket, "
                    "requests padded up, eager above the largest). Stores latency, "
                    "throughput, padding waste, hit/fallback rates and graph memory.",
        parents=[flags.workload_flags("built-in workload (mlp) or module.path:factory",
                                      "default: cuda when available, else cpu"),
                 flags.storage_flags("write only the --out bundle")])
    p.add_argument("--strategies", default=DEFAULT_STRATEGIES, metavar="LIST",
                   help="comma-separated from eager, compile, reduce-overhead, "
                        f"buckets:8/16/32, buckets:pow2-N (default: {DEFAULT_STRATEGIES})")
    p.add_argument("--requests", default="500", metavar="N",
                   help=f"requests in the stream, 1..{MAX_REQUESTS} (default 500)")
    p.add_argument("--batch-dist", default="uniform:1-64", metavar="DIST",
                   help="uniform:A-B, list:1,5,11 or a file of sizes, one per line "
                        "(default uniform:1-64)")
    p.add_argument("--seed", default="0", metavar="N", help="stream seed (default 0)")
    p.add_argument("--quick", action="store_true", help="shorter profiling (tests)")
    p.set_defaults(func=run)


def command_line(workload: str, params: dict, strategies: str, requests: int, dist: str,
                 seed: int, device: str, quick: bool, label: str | None) -> str:
    parts = ["python", "-m", "runner", "serve", "--workload", workload, "--strategies",
             strategies, "--requests", str(requests), "--batch-dist", dist, "--seed",
             str(seed), "--device", device, *(["--quick"] if quick else [])]
    for k, v in params.items():
        parts += ["--param", f"{k}={v}"]
    return shlex.join(parts + (["--label", label] if label else []))


class Collect:
    """Keeps the whole run; writes the bundle (when asked) and the database (when given)
    as it goes: the header at start, each strategy as it finishes."""

    def __init__(self, engine: Any = None, out: str | None = None) -> None:
        self.engine, self.out = engine, out
        self.environment = Environment()
        self.run: Run | None = None
        self.config: ServeConfig | None = None
        self.results: list[ServeResult] = []
        self.points: list[ServeProfilePoint] = []
        self.run_id: int | None = None
        self.written = False

    def start(self, environment: Environment, run: Run, config: ServeConfig) -> None:
        self.environment, self.run = environment, run
        self.config = copy.deepcopy(config)  # frozen, but its lists are not
        if self.engine is not None:
            from db.serve import start_serve_run

            self.run_id = start_serve_run(self.engine, environment, run, config)

    def result(self, r: ServeResult) -> None:
        self.results.append(copy.deepcopy(r))
        if self.engine is not None:
            from db.serve import add_result

            assert self.run_id is not None  # start() stored the run's header first
            add_result(self.engine, self.run_id, r)
        self._checkpoint()

    def profile(self, points: list[ServeProfilePoint]) -> None:
        self.points = copy.deepcopy(points)
        if self.engine is not None:
            from db.serve import add_profile

            assert self.run_id is not None  # start() stored the run's header first
            add_profile(self.engine, self.run_id, points)
        self._checkpoint()

    def _checkpoint(self) -> None:
        # The bundle is rewritten (atomically) after each part: a run killed from outside
        # (a time limit, a lost host) still leaves what finished, as status "running".
        if self.out and self.out != outfile.STDOUT:  # standard output: once, at the end
            fmt.write(self.out, self.bundle())

    def started(self) -> tuple[Run, ServeConfig]:
        """The run and its config, which start() sets before any result or finish."""
        assert self.run is not None and self.config is not None, "start() comes first"
        return self.run, self.config

    def finish(self, status: str) -> None:
        self.run = self.started()[0].finished(status, fmt.now_iso())
        first: BaseException | None = None
        if self.engine is not None and self.run_id is not None:
            try:
                from db.store import finish_run

                finish_run(self.engine, self.run_id, status)
            except Exception as e:  # noqa: BLE001 - the bundle must still be written
                first = e
        if self.out:
            fmt.write(self.out, self.bundle())
            self.written = True
        if first is not None:
            raise first

    def bundle(self) -> fmt.BundleDoc:
        run, config = self.started()
        section = ServeSection(config, self.results, self.points)
        return fmt.make_bundle(self.environment.to_json(), run.to_json(), [],
                               serve=section.to_json())


def _cell(v: Any, f: str = "{:.1f}") -> str:
    return "-" if v is None else f.format(v)


def format_table(results: list[ServeResult]) -> str:
    header = ["strategy", "status", "req/s", "rows/s", "p50 ms", "p99 ms", "waste",
              "fallback", "graphs", "pool MiB", "setup s", "correct"]
    rows = [header]
    for r in results:
        pool = r.graph_pool_bytes
        rows.append([r.strategy, r.status, _cell(r.requests_per_s),
                     _cell(r.rows_per_s, "{:.0f}"), _cell(r.latency_ms_p50, "{:.3f}"),
                     _cell(r.latency_ms_p99, "{:.3f}"), _cell(r.padding_waste, "{:.0%}"),
                     _cell(r.fallback_rate, "{:.0%}"), _cell(r.graphs, "{}"),
                     _cell(None if pool is None else pool / 2**20),
                     _cell(r.setup_s, "{:.2f}"), _cell(r.correct, "{}")])
    return "\n".join(flags.table(rows, left=(0,)))


class Serve(MeasuringCommand):
    def parse(self, args: argparse.Namespace) -> None:
        # Every flag, before anything is built, measured or written.
        self.params = parse_params(args.param)
        self.label = parse_label(args.label)
        try:
            self.spec = check_serve({"workload": args.workload, "params": self.params,
                                     "strategies": args.strategies,
                                     "batch_dist": args.batch_dist, "requests": args.requests,
                                     "seed": args.seed, "label": self.label})
        except SpecError as e:
            raise UsageError(f"--{e.field}: {e}" if e.field in ("requests", "seed")
                             else str(e)) from None

    def resolve(self, args: argparse.Namespace, storage: Storage) -> None:
        self.device = flags.device(args.device, "serve")

        from contract.buckets import request_stream
        from runner.core.workloads import resolve
        from runner.serve import scenario as serve

        self.workload = resolve(args.workload, self.params)
        self.stream = request_stream(self.spec.dist, self.spec.requests, self.spec.seed)
        self.quick = args.quick
        try:  # builds the model: a stateful or non-batch-first workload is refused here
            self.ctx = serve.make_context(self.workload, self.device, self.stream,
                                          self.spec.seed, args.quick)
        except ServeInputError as e:
            raise UsageError(str(e)) from None

    def run(self, engine: Any, storage: Storage) -> str:
        from runner.core import environment
        from runner.serve import scenario as serve

        spec, stream = self.spec, self.stream
        names = ",".join(s.name for s in spec.strategies)
        cmd = command_line(self.workload.name, self.params, names, spec.requests,
                           spec.dist.spec, spec.seed, self.device, self.quick, self.label)
        config = ServeConfig(batch_dist=spec.dist.spec, requests=spec.requests, seed=spec.seed,
                             strategies=[s.name for s in spec.strategies], stream=stream)
        self.sink = Collect(engine, storage.out)
        return serve.run_serve(
            self.ctx, spec.strategies, self.sink,
            environment=environment.capture(self.device),
            run=serve.new_run(self.workload, self.ctx, self.label, cmd), config=config,
            profile_sizes=serve.profile_sizes(stream, spec.strategies),
            progress=lambda msg: print(msg, file=sys.stderr, flush=True))

    def report(self, status: str, engine: Any, storage: Storage) -> None:
        from runner.ops.commands.store import shown_url

        sink, spec = self.sink, self.spec
        run = sink.started()[0]
        print(f"serve run {sink.run_id if sink.run_id is not None else run.uuid} "
              f"{status}: {len(sink.results)} strategies, {spec.requests} requests "
              f"({spec.dist.spec}, seed {spec.seed}) on {self.device}")
        if engine is not None:
            print(f"stored in {shown_url(str(engine.url))} (uuid {run.uuid})")
        if sink.written and storage.out:
            print(f"bundle written to {outfile.shown(storage.out)}")
        print(format_table(sink.results))


def run(args: argparse.Namespace) -> int:
    return Serve().main(args)
