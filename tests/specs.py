"""Reading Altair chart specs in tests: every unit chart (a dict with an encoding) of a
layered, faceted or concatenated spec, and their encodings, wherever they nest."""

from __future__ import annotations

from typing import Any


def units(spec: Any) -> list[dict]:
    """Every dict of `spec` (a chart's to_dict()) that carries an encoding."""
    found: list[dict] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("encoding"), dict):
                found.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return found


def encodings(spec: Any) -> list[dict]:
    """All encoding dicts in the spec."""
    return [u["encoding"] for u in units(spec)]
