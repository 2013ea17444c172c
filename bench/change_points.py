"""How often the change points of runner/history/changes.py find a step that is there,
and call one that is not: simulated series, seeded, so the figures in docs/MEASUREMENT.md
("Change points across runs") can be remade.

Each series has 4 to 24 runs, log-normal noise of `sd` between runs, and (for a step) a
step up of `step` at a random run. Each run's own 95% interval is +-(k x sd): k = 2 when
a run's interval holds the spread between runs, k = 0.5 when it understates it (one
process, a host state that lasts the run). Not measurements: a check of the detector and
the verdict, on series whose truth is known.

usage: python bench/change_points.py [--series 200] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from runner.history import changes as hc  # noqa: E402
from runner.history.series import MEASURED  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print("own interval  step  noise  any change point  judged a regression  "
          "a regression at the newest run")
    for k in (2.0, 0.5):
        for step in (0.0, 0.05, 0.2):
            for sd in (0.01, 0.03):
                any_cp = found = newest = 0
                for _ in range(args.series):
                    n = int(rng.integers(4, 25))
                    at = int(rng.integers(1, n))
                    v = np.exp(rng.normal(0, sd, n)) * np.where(np.arange(n) >= at,
                                                                1 + step, 1.0)
                    s = pd.DataFrame({"run_id": range(n), "value": v,
                                      "low": v * (1 - k * sd), "high": v * (1 + k * sd)})
                    cps = hc.series_changes(s, "eager", 8, MEASURED)
                    any_cp += bool(cps)
                    found += any(c.verdict == hc.REGRESSION for c in cps)
                    # What `check --series` fails on: a regression whose first run after
                    # is the newest.
                    newest += any(c.verdict == hc.REGRESSION and c.index == n - 1
                                  for c in cps)
                print(f"+-{k:g} sd       {step:4.0%}  {sd:4.0%}  "
                      f"{any_cp / args.series:15.0%}  {found / args.series:19.0%}  "
                      f"{newest / args.series:29.0%}")


if __name__ == "__main__":
    main()
