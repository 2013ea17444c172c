"""What `check` says: the rows it judged, the console table, the Markdown step summary
and the JUnit XML, each telling a pass, a regression and "cannot tell" apart (issue 47).
Pure text from the rows; runner/ops/commands/check.py reads the runs and writes the files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from contract.plain import plain
from runner.history import changes as hc

# The exit codes a CI job reads (docs/CI.md): 0 every point judged and none regressed;
# 1 a regression beyond the threshold; 2 bad input, nothing judged; 3 no regression, but
# some point's noise would hide one of the threshold's size.
EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_CANNOT_TELL = 0, 1, 2, 3


@dataclass(frozen=True)
class Row:
    """One line of the check: a (mode, batch size) and what was found there."""

    mode: str
    batch_size: int
    basis: str
    before_ms: float | None
    run_ms: float | None
    change: float | None
    interval: str
    verdict: str
    note: str
    detectable: float  # the smallest slowdown the check could call here; inf: none
    result: str        # changes.OK, FAIL or CANNOT_TELL


def row(mode: str, batch_size: int, basis: str, before_ms: float | None,
        run_ms: float | None, change: float | None, interval: str, verdict: str,
        note: str, detectable: float, threshold: float) -> Row:
    return Row(mode, batch_size, basis, before_ms, run_ms, change, interval, verdict, note,
               detectable, hc.outcome(verdict, change, detectable, threshold))


def exit_code(rows: list[Row]) -> int:
    results = {r.result for r in rows}
    if hc.FAIL in results:
        return EXIT_REGRESSION
    if hc.CANNOT_TELL in results or not rows:
        return EXIT_CANNOT_TELL
    return EXIT_OK


HEAD = ["mode", "batch", "figure", "before ms", "run ms", "change", "before/after 95%",
        "verdict", "sees from", "result", "note"]


def cells(r: Row) -> list[str]:
    def ms(v):
        return "-" if v is None else f"{v:.4g}"

    return [r.mode, str(r.batch_size), "host-normalised" if r.basis.startswith("host")
            else "measured", ms(r.before_ms), ms(r.run_ms),
            "-" if r.change is None else f"{r.change:+.1%}", r.interval, r.verdict,
            hc.detectable_text(r.detectable), r.result, r.note]


def blind(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.result == hc.CANNOT_TELL]


def _worst(rows: list[Row]) -> str:
    d = max(r.detectable for r in rows)
    return "no slowdown at all" if not math.isfinite(d) else f"only a slowdown above {d:.1%}"


def outcome_line(rows: list[Row], threshold: float) -> str:
    """The last line: what the exit code says, in words."""
    failed, unseen = [r for r in rows if r.result == hc.FAIL], blind(rows)
    if failed:
        return f"{len(failed)} regression(s) beyond {threshold:.1%}"
    if not rows:
        return "cannot tell: no point to judge"
    if unseen:
        return (f"cannot tell: {len(unseen)} of {len(rows)} point(s) too noisy to see a "
                f"{threshold:.1%} regression (the noisiest sees {_worst(unseen)}); no "
                "regression found")
    return f"ok: no regression beyond {threshold:.1%} outside the intervals"


def reason(r: Row, threshold: float) -> str:
    """Why a point cannot tell, in one sentence."""
    sees = ("no slowdown at all (no interval, or nothing to compare with)"
            if not math.isfinite(r.detectable) else f"a slowdown only above "
            f"{r.detectable:.1%}")
    return (f"cannot tell: the noise here lets the check see {sees}, more than the "
            f"{threshold:.1%} threshold")


def markdown(title: str, rows: list[Row], threshold: float, notes: list[str]) -> str:
    """The step summary: a heading, the outcome and the table."""
    failed, unseen = [r for r in rows if r.result == hc.FAIL], blind(rows)
    if failed:
        said = (f"**{len(failed)} regression(s)** slower by more than {threshold:.1%} with "
                "the 95% interval wholly slower.")
    elif unseen:
        said = (f"**Cannot tell** at {len(unseen)} of {len(rows)} point(s): their noise "
                f"would hide a {threshold:.1%} regression (see \"sees from\"). No "
                "regression found where the check can see.")
    else:
        said = f"No regression beyond {threshold:.1%} outside the intervals."
    out = [f"### {_md(title)}", "", said, ""]
    out += [f"- {_md(n)}" for n in notes]
    out += ["", "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(_md(c) for c in cells(r)) + " |" for r in rows]
    return "\n".join(out) + "\n\n"


def _md(text: str) -> str:
    """A cell or line of the step summary as text, not Markdown: a run's name, its
    workload or a file name may hold anything (contract/plain.py, the pages' helper)."""
    return plain(text)


def junit(title: str, workload: str, rows: list[Row], threshold: float) -> str:
    """JUnit XML: one testsuite, a testcase a (mode, batch size), a failure for each
    regression and a skipped testcase, with its reason, for each point that cannot
    tell."""
    import xml.etree.ElementTree as ET

    failed, skipped = sum(r.result == hc.FAIL for r in rows), len(blind(rows))
    suite = ET.Element("testsuite", name=title, tests=str(len(rows)), failures=str(failed),
                       errors="0", skipped=str(skipped))
    for r in rows:
        case = ET.SubElement(suite, "testcase", classname=f"launchbench.{workload}.{r.mode}",
                             name=f"{r.mode} batch {r.batch_size}", time="0")
        c = cells(r)
        said = (f"{r.verdict}: {c[3]} -> {c[4]} ms ({c[5]}; before/after {r.interval}; "
                f"sees a slowdown from {c[8]}; {r.note}; on the {r.basis} step)")
        if r.result == hc.FAIL:
            ET.SubElement(case, "failure", type="regression",
                          message=f"slower by more than {threshold:.1%}").text = said
        elif r.result == hc.CANNOT_TELL:
            ET.SubElement(case, "skipped", message=reason(r, threshold)).text = said
        else:
            ET.SubElement(case, "system-out").text = said
    root = ET.Element("testsuites", name="launchbench check", tests=suite.get("tests", "0"),
                      failures=suite.get("failures", "0"), skipped=suite.get("skipped", "0"))
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
