"""Host and GPU apart, checked on real rounds (issue 39, item 2).

For every point of the bundles given: the step split into GPU busy, launch cost and the
rest (contract/host_split.py split), the speedup projected to 5, 10 and 20 us a
launch beside the measured one, and, for eager, the projection held against the rounds:
each round's step predicted from that round's launch cost (the probe) against the one
measured. Prints a table per bundle and the share of eager rounds within 10%.

usage: python bench/host_split_check.py BUNDLE.json [BUNDLE.json ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contract.host_split import (  # noqa: E402
    REFERENCE_LAUNCH_US,
    check_rounds,
    projected_speedup,
    split,
)


def launches(m: dict) -> float | None:
    h, g = m.get("host_launches_per_step"), m.get("graph_launches_per_step")
    return None if h is None else h + (g or 0)


def rows_of(doc: dict) -> tuple[list[list[str]], list[tuple[int, float, float, int]]]:
    by: dict[int, dict[str, dict]] = {}
    for m in doc["measurements"]:
        if m.get("status") == "ok" and m.get("step_ms"):
            by.setdefault(m["batch_size"], {})[m["mode"]] = m
    rows, checks = [], []
    for b, ms in sorted(by.items()):
        eager = ms.get("eager")
        for mode, m in ms.items():
            s = split(m["step_ms"], m.get("gpu_busy_ms"), launches(m), m.get("launch_us"))
            host = (m.get("details") or {}).get("host_ms_per_step")
            proj = ["-"] * len(REFERENCE_LAUNCH_US)
            if eager is not None and mode != "eager":
                e_host = (eager.get("details") or {}).get("host_ms_per_step")
                for i, u in enumerate(REFERENCE_LAUNCH_US):
                    x = projected_speedup((eager.get("gpu_busy_ms"), e_host,
                                           eager.get("launch_us")),
                                          (m.get("gpu_busy_ms"), host, m.get("launch_us")), u)
                    proj[i] = f"{x:.2f}" if x else "-"
            rnd = "-"
            if mode == "eager":
                c = check_rounds(m.get("samples_ms") or [], m.get("launch_us_rounds") or [],
                                 m.get("gpu_busy_ms"), host)
                if c is not None:
                    rnd = f"{c.within(0.10):.0%} (med {c.median_error:.1%})"
                    checks.append((b, c.within(0.10), c.median_error, len(c.errors)))
            sp = m.get("speedup")
            rows.append([str(b), mode, f"{m['step_ms']:.4f}",
                         f"{m.get('launch_us') or 0:.1f}",
                         *([f"{s.share('gpu'):.0%}", f"{s.share('launch'):.0%}",
                            f"{s.share('rest'):.0%}"] if s else ["-"] * 3),
                         f"{sp:.2f}" if sp else "-", *proj, rnd])
    return rows, checks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundles", nargs="+")
    ap.add_argument("--out")
    a = ap.parse_args()
    head = ["batch", "mode", "step ms", "launch us", "gpu", "launch", "rest", "speedup",
            *(f"@{u:g}us" for u in REFERENCE_LAUNCH_US), "eager rounds within 10%"]
    out = []
    for path in a.bundles:
        doc = json.loads(Path(path).read_text())
        rows, checks = rows_of(doc)
        w = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        out.append(f"== {path}: {doc['run'].get('workload')} on "
                   f"{doc['environment'].get('gpu_name')}")
        out += ["  ".join(v.rjust(n) for v, n in zip(r, w, strict=True))
                for r in [head, *rows]]
        n = sum(k for *_, k in checks)
        hit = sum(share * k for _, share, _, k in checks)
        if n:
            out.append(f"eager rounds predicted within 10% from their launch cost: "
                       f"{hit / n:.0%} of {n}")
    text = "\n".join(out)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
