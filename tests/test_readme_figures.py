"""The README's figures come from a shipped run (issue 44 item 5, issue 46 item 5): every
row of its samples table is read back from the bundle it names, step times and speedups
as the pages quote them. A remade sample that moves a figure fails here until the README
says the new one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contract import bundle as fmt
from contract.speedups import speedups
from db.samples import SAMPLES
from tests.records import points_of

README = Path(__file__).resolve().parents[1] / "README.md"
MODES = ("eager", "compile", "reduce-overhead", "cuda-graph")
# The table's run column, to the sample it was read from.
ROWS = {
    "H100, torch 2.11, `mlp` fp32": "h100-mlp.json",
    "H100, torch 2.11, `hf-causal-lm` decode": "h100-hf-causal-lm-decode.json",
    "H100, torch 2.11, `timm` resnet18": "h100-timm-resnet18.json",
    "H200, torch 2.11, `mlp` fp32": "h200-mlp.json",
    "H200, torch 2.11, `transformer-decode` bf16": "h200-transformer-decode.json",
    "H200, torch 2.11, `hf-causal-lm` decode": "h200-hf-causal-lm-decode-v7.json",
    "H200, torch 2.11, `timm` resnet18": "h200-timm-resnet18-v7.json",
    "L40S, torch 2.8 (published article)": "published-l40s-day25.json",
}
CELL = re.compile(r"^([\d.]+)(?: \(([\d.]+)x, ([\d.]+)-([\d.]+)\))?$")


def _table() -> list[list[str]]:
    text = README.read_text()
    start = text.index("| run | batch | eager | compile | reduce-overhead | cuda-graph |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _sample(run: str) -> str:
    found = [f for prefix, f in ROWS.items() if run.startswith(prefix)]
    assert len(found) == 1, f"README row {run!r}: no shipped sample named for it here"
    return found[0]


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


@pytest.mark.parametrize("row", _table(), ids=lambda r: f"{r[0][:30]} b{r[1]}")
def test_every_figure_of_the_samples_table_is_the_sample_s_own(row):
    run, batch, *cells = row
    points = points_of(fmt.read(SAMPLES / _sample(run)))
    steps = {m.mode: m.timing.step_ms for m in points if m.batch_size == int(batch)}
    ratio = {s.mode: s for s in speedups(points) if s.batch_size == int(batch)}
    for mode, cell in zip(MODES, cells, strict=True):
        got = CELL.match(cell)
        assert got, f"{run} batch {batch} {mode}: {cell!r} is not 'ms (x, lo-hi)'"
        ms, x, lo, hi = got.groups()
        assert steps[mode] is not None
        assert f"{steps[mode]:.{_decimals(ms)}f}" == ms, (run, batch, mode, steps[mode])
        if x is None:
            continue
        s = ratio[mode]
        for shown, value in ((x, s.speedup), (lo, s.ci_low), (hi, s.ci_high)):
            assert value is not None and f"{value:.{_decimals(shown)}f}" == shown, (
                run, batch, mode, shown, value)
