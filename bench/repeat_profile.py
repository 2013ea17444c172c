"""Where one repeat pass of the default sweep spends its time (issue 47, item 4).

A `--processes` repeat child (runner/core/repeat.py) run in this process under cProfile,
in the child's environment (repeat.CHILD_ENV),
with the default sweep's request (mlp, 1, 8, 64, 8192, four modes, standard, 3 processes),
after a sweep has warmed the on-disk compile caches. Prints the wall time of the warm-up
(imports) and of each batch size, then the functions that took the most time, cumulative
and own.

usage (GPU host, after a sweep): python bench/repeat_profile.py [--batch-sizes 1,8,64,8192]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-sizes", default="1,8,64,8192")
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    from runner.core.repeat import CHILD_ENV
    for k, v in CHILD_ENV.items():  # as the sweep starts its children (before torch loads)
        os.environ.setdefault(k, v)
    from contract.specs import SweepSpec
    sizes = tuple(int(b) for b in a.batch_sizes.split(","))
    spec = SweepSpec(workload="mlp", batch_sizes=sizes,
                     modes=("eager", "compile", "reduce-overhead", "cuda-graph"),
                     device="cuda", timing="standard", processes=3)
    sys.stdin = io.StringIO(json.dumps(spec.to_json()) + "\n"
                            + json.dumps({"go": list(sizes)}) + "\n")
    marks: list[tuple[str, float]] = []
    out = io.StringIO()
    prof = cProfile.Profile()
    t0 = time.perf_counter()

    class Tee(io.StringIO):  # each JSON line the child prints ends one batch size
        def write(self, s: str) -> int:
            if s.strip():
                marks.append((s[:40], time.perf_counter() - t0))
            return out.write(s)

    from runner.core import repeat
    real_wait = repeat.wait_for_go

    def wait_marked():
        marks.append(("warm (imports, workload)", time.perf_counter() - t0))
        return real_wait()

    repeat.wait_for_go = wait_marked
    with contextlib.redirect_stdout(Tee()):
        prof.enable()
        repeat.main()
        prof.disable()
    wall = time.perf_counter() - t0
    last = 0.0
    print(f"repeat pass wall {wall:.1f} s")
    for what, t in marks:
        print(f"  {t - last:6.2f} s  {what}")
        last = t
    s = io.StringIO()
    st = pstats.Stats(prof, stream=s)
    st.sort_stats("cumulative").print_stats(a.top)
    st.sort_stats("tottime").print_stats(20)
    for line in s.getvalue().splitlines():
        if line.strip() and not line.startswith(("   Ordered", "   List reduced")):
            print(line[:160])
    return 0


if __name__ == "__main__":
    sys.exit(main())
