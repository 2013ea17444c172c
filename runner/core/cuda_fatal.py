"""Sticky CUDA errors: the ones that poison the process's CUDA context.

A device-side assert, an illegal address or a launch failure is not one point's problem:
once the driver reports it, every later CUDA call in the process fails with it (CUDA's
"sticky" errors; the context must be destroyed, which means the process must end). Seen
on the H200: a transformers StaticCache walked off its end inside an Inductor kernel
("index out of bounds"), and the sweep died in the next torch.cuda.synchronize(), with
no point kept. Here is how a point recognises one, so the sweep keeps what it measured
and runs the rest in a fresh process (runner/core/rescue.py).

Standard library only: it reads exceptions, it never touches CUDA.
"""

from __future__ import annotations

from collections.abc import Iterable

from contract.measurement import Measurement

# cudaError_t codes the CUDA runtime documents as leaving the context unusable ("the
# process must be terminated and relaunched"). torch >= 2.8 raises CUDA errors as
# torch.AcceleratorError with the code in `error_code`.
STICKY_CODES = {
    700: "illegal memory access",  # cudaErrorIllegalAddress
    702: "launch timeout",  # cudaErrorLaunchTimeout
    710: "device-side assert",  # cudaErrorAssert
    714: "hardware stack error",  # cudaErrorHardwareStackError
    715: "illegal instruction",  # cudaErrorIllegalInstruction
    716: "misaligned address",  # cudaErrorMisalignedAddress
    717: "invalid address space",  # cudaErrorInvalidAddressSpace
    718: "invalid program counter",  # cudaErrorInvalidPc
    719: "unspecified launch failure",  # cudaErrorLaunchFailure
}
# The same errors as their messages read (older torch raises a plain RuntimeError whose
# text is cudaGetErrorString's; Triton's launcher words some of them its own way).
STICKY_MESSAGES = (
    "device-side assert triggered",
    "an illegal memory access was encountered",
    "illegal memory access",
    "unspecified launch failure",
    "an illegal instruction was encountered",
    "misaligned address",
    "hardware stack error",
    "invalid program counter",
    "the launch timed out and was terminated",
)


# This process's own context, once lost (runner/core/point.py sets it): whoever would run
# more on the GPU here (a worker's next job) must start a new process instead.
_lost_here: str | None = None


def mark_lost(message: str) -> None:
    global _lost_here
    _lost_here = _lost_here or message


def lost_here() -> str | None:
    """The CUDA message that lost this process's context, or None."""
    return _lost_here


def is_sticky(e: BaseException | None) -> bool:
    """Whether an exception (or one it was raised from) is a sticky CUDA error."""
    seen = 0
    while e is not None and seen < 8:
        if getattr(e, "error_code", None) in STICKY_CODES:
            return True
        if is_sticky_text(str(e)):
            return True
        e = e.__cause__ or e.__context__
        seen += 1
    return False


def is_sticky_text(text: str | None) -> bool:
    low = (text or "").lower()
    return any(s in low for s in STICKY_MESSAGES)


def lost_message(batch_size: int) -> str:
    """What a point that never ran says (the issue's wording, so users can grep it)."""
    return f"not run: CUDA context lost at batch {batch_size}"


def lost_in(measurements: Iterable[Measurement]) -> tuple[int, str] | None:
    """(batch size, CUDA message) of the first point whose process lost its context."""
    for m in measurements:
        if m.host.cuda_context_lost:
            return m.batch_size, m.host.cuda_context_lost
    return None


def summary(measurements: list[Measurement]) -> str | None:
    """The one line a front end prints when a sweep lost a CUDA context (None if not)."""
    hit = lost_in(measurements)
    if hit is None:
        return None
    ok = sum(1 for m in measurements if m.status == "ok")
    rescued = sum(1 for m in measurements if m.host.rescued)
    rest = (f"; the {rescued} points after it ran in fresh processes" if rescued else "")
    return (f"CUDA context lost at batch {hit[0]}: {hit[1]} ({ok} points ok kept{rest})")
