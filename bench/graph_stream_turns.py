"""Why a cuda-graph point's memory cost once read 4 MiB instead of 38 MiB (mlp batch 1,
H100): what a manual graph keeps over its clean start, turn by turn of torch's stream pool,
with the warm-up on a new torch.cuda.Stream() and the capture on torch.cuda.graph's own
stream (the runner before graph_streams), and with runner/core/modes.py graph_streams
(one warm-up and one capture stream a process, never the same). GPU host only.

usage: python bench/graph_stream_turns.py [--turns 33]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=33)
    a = ap.parse_args()
    import torch

    from runner.core import memory, modes
    from runner.core.point import reset_state
    from runner.core.workloads import resolve

    model, make_input = resolve("mlp", {}).build("cuda")
    x = make_input(1)

    def old_way() -> None:  # per point: a new warm-up stream, torch's capture stream
        modes.warm_up_on_side_stream(model, x)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            model(x)
        torch.cuda.synchronize()
        old_way.keep = g  # type: ignore[attr-defined]

    def runner_way() -> None:
        p = modes.prepare("cuda-graph", model, x, "cuda")
        p.step()
        runner_way.keep = p  # type: ignore[attr-defined]

    with torch.no_grad():
        for name, fn in (("old: new warm-up stream each point", old_way),
                         ("runner: graph_streams", runner_way)):
            kept = []
            for _ in range(a.turns):
                m0 = memory.clean("cuda")
                fn()
                kept.append((memory.released("cuda").reserved - m0.reserved) >> 20)
                fn.keep = None  # type: ignore[attr-defined]
                reset_state("cuda")
            print(f"{name}: kept MiB over {a.turns} turns {dict(Counter(kept))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
