"""Render the README's step-timeline picture from a real bundle: eager against
cuda-graph at one batch size, as the Run page draws it (PNG through vl-convert, offline).

usage: python bench/timeline_picture.py [BUNDLE.json] [--batch 8]
           [--modes eager,cuda-graph] [--out docs/timeline-h200-mlp-b8.png]
Default: the shipped H200 mlp sample at batch 8. A bundle without traces at that batch
size (measured before bundle version 4, or on a CPU) is refused in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vl_convert as vlc  # noqa: E402

from contract import bundle as fmt  # noqa: E402
from pages.charts import timeline_chart  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle", nargs="?", default=str(ROOT / "data/samples/h200-mlp.json"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--modes", default="eager,cuda-graph")
    ap.add_argument("--out", default=str(ROOT / "docs/timeline-h200-mlp-b8.png"))
    ap.add_argument("--fit-each", action="store_true", help="each mode on its own axis")
    args = ap.parse_args()
    try:
        doc = fmt.read(args.bundle)
    except fmt.BundleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    at = [m for m in doc["measurements"] if m["batch_size"] == args.batch and m.get("trace")]
    found = {m["mode"]: m["trace"] for m in at}
    timed = {m["mode"]: m.get("step_ms") for m in at}  # stated beside the profiled step
    missing = [m for m in modes if m not in found]
    if missing:
        print(f"error: {args.bundle} holds no trace for {', '.join(missing)} at batch size "
              f"{args.batch} (traced there: {', '.join(found) or 'none'})", file=sys.stderr)
        return 2
    env = doc["environment"]
    title = (f"{doc['run']['workload']} batch {args.batch} on {env.get('gpu_name')}, "
             f"torch {env.get('torch_version')}: one step")
    chart = timeline_chart.timeline_chart([(m, found[m], timed[m]) for m in modes],
                                    same_scale=not args.fit_each).properties(title=title)
    Path(args.out).write_bytes(vlc.vegalite_to_png(chart.to_dict(), scale=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
