"""The documents a reader is sent to are there (issue 36).

A clone holds only the repository, so a comment that cites a design note kept elsewhere
sends its reader nowhere. Checked over every file git knows (tracked, or new and not
ignored):
- every markdown file a file names is in the repository: by its path from the root, or
  from the citing file's folder (how a markdown link resolves); a bare name counts only
  where such a file is;
- every citation of a section, a markdown name followed by a quoted title (a comma
  between), names a heading that document has, and every link to a heading's anchor
  (`#section`) an anchor it has;
- every package of runner/ and db/ says in its docstring what it holds and what it may
  import (docs/ARCHITECTURE.md, "What each room may import").
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A markdown file's name, with the folders before it: not part of a longer path or word.
DOC = r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md)\b"
DOC_RE = re.compile(DOC)
# A document, a comma and a quoted title; the title may wrap onto the next line of a comment
# or docstring.
SECTION_RE = re.compile(DOC + r',\s*"([^"\n]{1,200})"')
ANCHOR_RE = re.compile(DOC + r"#([\w-]+)")
URL_RE = re.compile(r"\w+://\S+")  # another site's README.md is not ours to check
# A comment's or docstring's line break, its indent and its comment marker: one space.
WRAP_RE = re.compile(r"\s*\n\s*(?:#+ |// )?\s*")
HEADING_RE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
PACKAGES = ("contract", "runner", "db")
MD = ".md"


@cache
def _files() -> tuple[str, ...]:
    """What git knows of the working tree: tracked files and new ones not ignored."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout: the files of the repository are unknown")
    return tuple(sorted({f for f in out.decode().split("\0")
                         if f and (ROOT / f).is_file()}))


def _text(rel: str) -> str | None:
    try:
        return (ROOT / rel).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # a picture, a binary: nothing cited in it


def _resolve(cited: str, citing: str, files: frozenset[str]) -> str | None:
    """The repository path a citation names, or None where no such file is."""
    for base in (Path(), Path(citing).parent):
        path = (base / cited).as_posix()
        parts: list[str] = []
        for part in path.split("/"):  # ../ and ./ without touching the disk
            if part == "..":
                if not parts:
                    break
                parts.pop()
            elif part not in ("", "."):
                parts.append(part)
        else:
            if "/".join(parts) in files:
                return "/".join(parts)
    return None


def headings(markdown: str) -> list[str]:
    """A markdown document's headings, as written (outside fenced code blocks, where a
    line starting with # is a comment)."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (m := HEADING_RE.match(line)):
            out.append(" ".join(m.group(1).split()))
    return out


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def citations(text: str) -> tuple[list[tuple[int, str]], list[tuple[str, str]],
                                   list[tuple[str, str]]]:
    """(documents named with their line, (document, section) pairs, (document, anchor)
    pairs) in one file's text."""
    plain = URL_RE.sub(" ", text)
    docs = [(plain.count("\n", 0, m.start()) + 1, m.group(1))
            for m in DOC_RE.finditer(plain)]
    joined = WRAP_RE.sub(" ", plain)
    sections = [(m.group(1), " ".join(m.group(2).split()))
                for m in SECTION_RE.finditer(joined)]
    anchors = [(m.group(1), m.group(2)) for m in ANCHOR_RE.finditer(plain)]
    return docs, sections, anchors


@cache
def _problems() -> tuple[list[str], list[str]]:
    files = frozenset(_files())
    missing, wrong = [], []
    for rel in sorted(files):
        text = _text(rel)
        if text is None:
            continue
        docs, sections, anchors = citations(text)
        for line, cited in docs:
            if _resolve(cited, rel, files) is None:
                missing.append(f"{rel}:{line} cites {cited}, which is not in the repository")
        for cited, title in sections:
            target = _resolve(cited, rel, files)
            if target is not None and title not in headings(_text(target) or ""):
                wrong.append(f'{rel} cites {cited}, "{title}": no such heading in {target}')
        for cited, name in anchors:
            target = _resolve(cited, rel, files)
            if target is not None and name not in map(anchor, headings(_text(target) or "")):
                wrong.append(f"{rel} links {cited}#{name}: no such anchor in {target}")
    return missing, wrong


def test_every_cited_document_is_in_the_repository():
    assert _problems()[0] == []


def test_every_cited_section_is_a_heading_of_its_document():
    assert _problems()[1] == []


def test_every_package_of_runner_and_db_says_what_it_holds_and_may_import():
    inits = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py"))
    assert len(inits) >= 7  # runner, its four packages, ops/commands, db
    silent = [str(p.relative_to(ROOT)) for p in inits
              if "import" not in (ast.get_docstring(ast.parse(p.read_text("utf-8")))
                                  or "").lower()]
    assert silent == []


# --- the checks themselves: a scanner that finds nothing would pass everything above ------

def test_a_bare_name_a_wrapped_title_and_a_code_comment_are_read_right():
    # Built from parts, so this file cites none of these made-up documents itself.
    guide, readme = "GUIDE" + MD, "README" + MD
    files = frozenset({readme, "docs/" + guide, "pkg/mod.py"})
    text = (f'"""Why ({guide}, "Setup"); see docs/{guide}, "Rounds and\n'
            f'    interleaving", and {readme}."""\n'
            f'# and (docs/{guide}, "The host is part of the\n#   measurement")\n')
    docs, sections, _ = citations(text)
    assert docs == [(1, guide), (1, "docs/" + guide), (2, readme), (3, "docs/" + guide)]
    # A bare name resolves from the root or beside the citing file, nowhere else.
    assert _resolve(guide, "pkg/mod.py", files) is None
    assert _resolve(guide, "docs/OTHER" + MD, files) == "docs/" + guide
    assert _resolve("../" + readme, "docs/OTHER" + MD, files) == readme
    # Wrapped titles are read whole, across a docstring's indent and a comment's marker.
    assert sections == [(guide, "Setup"), ("docs/" + guide, "Rounds and interleaving"),
                        ("docs/" + guide, "The host is part of the measurement")]
    doc = "# Guide\n\n## Rounds and interleaving\n\n```\n# Setup\n```\n"
    assert headings(doc) == ["Guide", "Rounds and interleaving"]  # not the code's '#'
    assert anchor("Names: records and rows") == "names-records-and-rows"


def test_the_scan_sees_the_citations_in_the_code():
    # The walk over the repository must reach real files and read their wrapped titles.
    _, sections, _ = citations(_text("runner/core/rounds.py") or "")
    assert ("docs/MEASUREMENT.md", "The host is part of the measurement") in sections
    assert "runner/core/rounds.py" in _files() and "docs/MEASUREMENT.md" in _files()
    assert "Intervals" in headings(_text("docs/MEASUREMENT.md") or "")
