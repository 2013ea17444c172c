"""Uploaded bundle files: checked one by one, each imported in its own transaction.

A file that is too big, not UTF-8, not JSON, truncated, of another format or version, or
already imported gets one line naming the file and the problem, and writes nothing. One
bad file never blocks the good ones beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from contract import bundle as fmt
from contract.limits import MAX_BUNDLE_BYTES

MAX_UPLOAD_MB = MAX_BUNDLE_BYTES >> 20
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1024 * 1024


@dataclass(frozen=True)
class UploadResult:
    name: str
    ok: bool                  # imported now
    message: str              # one line for the page
    run_id: int | None = None


def read_upload(name: str, data: bytes) -> fmt.Bundle:
    """The validated bundle in an uploaded file, or BundleError naming the file."""
    shown = repr(name)
    if len(data) > MAX_UPLOAD_BYTES:
        raise fmt.BundleError(f"{shown} is {len(data) / 1024 / 1024:.1f} MB: over the "
                              f"{MAX_UPLOAD_MB} MB limit for a bundle")
    if not data.strip():
        raise fmt.BundleError(f"{shown} is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise fmt.BundleError(f"{shown} is not UTF-8 text, so not a launchbench bundle "
                              "(expected a .json file from `python -m runner sweep --out` "
                              "or `export`)") from None
    try:
        return fmt.loads(text, name=shown)
    except fmt.BundleError as e:
        msg = str(e)
        raise fmt.BundleError(msg if name in msg else f"{shown}: {msg}") from None


def import_each(files: Iterable[tuple[str, bytes]],
                import_one: Callable[[fmt.Bundle, str], tuple[int, bool]]) -> list[UploadResult]:
    """Import each (file name, bytes) through `import_one(bundle, name)` -> (run id, created
    now) (the door's db.store.import_safely); one result line per file."""
    results = []
    for name, data in files:
        try:
            doc = read_upload(name, data)
        except fmt.BundleError as e:
            results.append(UploadResult(name, False, str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - the page shows one line, whatever broke
            results.append(UploadResult(name, False, f"{name!r}: cannot read "
                                        f"({type(e).__name__}); nothing imported"))
            continue
        try:
            run_id, created = import_one(doc, name)
        except (fmt.BundleError, PermissionError) as e:  # one line each, never a traceback
            results.append(UploadResult(name, False, str(e)))
            continue
        if created:
            results.append(UploadResult(name, True, f"{name!r}: imported as run {run_id} "
                                        f"({fmt.contents(doc)})", run_id))
        else:
            results.append(UploadResult(name, False, f"{name!r}: already imported as run "
                                        f"{run_id}: nothing added", run_id))
    return results
