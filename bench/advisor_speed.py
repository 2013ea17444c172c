"""How long the capture-size advisor takes on a wide distribution (issue 27): 2,000 lines of
`size,count` over sizes 1-512, SGLang's rules, a 64 MiB budget, every graph count priced
(tolerance 0). A person waits for this on the Serve page and the CLI; it should stay well
under a second or two on a 2-core machine.

usage: python bench/advisor_speed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contract import capture_advisor as ca  # noqa: E402
from contract import capture_dist as cd  # noqa: E402
from contract import capture_sizes as cs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(7)
    d = cd.parse_text("\n".join(f"{rng.randint(1, 512)},{rng.randint(1, 99)}"
                                for _ in range(2000)))
    curve = cs.Curve(32 * cs.MIB, 0.0, 64 * 1024, 0.1, 0.01, "bench")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        a = ca.advise(d, cs.EngineRules("sglang"), curve, 64 * cs.MIB, tolerance=0.0)
        times.append(time.perf_counter() - t0)
    print(f"{len(d.counts)} sizes, {len(a.by_graphs)} graph counts priced: median "
          f"{statistics.median(times):.3f} s, slowest {max(times):.3f} s over {args.repeat}")


if __name__ == "__main__":
    main()
