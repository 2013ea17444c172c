"""The pages' name for contract/plain.py's `plain()`, the one helper that makes a
bundle's, a form's or a URL's text safe in anything streamlit renders as Markdown, and
`cut()`, which bounds a text a page shows anywhere else (a table cell, a picker). It
lives in the contract because the CLI's GitHub step summary (runner/ops/commands/
check_report.py) is Markdown too, and takes the same helper."""

from contract.plain import JOINER, MAX_CELL, MAX_SHOWN, cut, plain

__all__ = ["JOINER", "MAX_CELL", "MAX_SHOWN", "cut", "plain"]
