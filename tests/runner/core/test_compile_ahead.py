"""The compile helpers of a sweep (runner/core/compile_ahead.py), on the CPU: which sweeps
get them, and that a helper compiles its batch sizes into the shared on-disk cache and
ends. On CUDA, tests/runner/core/test_gpu_runner.py checks that the sweep then hits it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contract.specs import SpecError, SweepSpec
from runner.core import compile_ahead
from runner.core.sweep import validate_spec

TINY = {"depth": "2", "width": "16"}


def spec(**kw) -> SweepSpec:
    base = dict(workload="mlp", params=TINY, batch_sizes=(1, 8), modes=("eager", "compile"),
                device="cuda")
    return SweepSpec(**{**base, **kw})


def test_only_sweeps_with_a_compile_to_share_get_helpers(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))  # fresh
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", "1")
    assert compile_ahead.wanted(spec())
    assert not compile_ahead.wanted(spec(device="cpu"))
    assert not compile_ahead.wanted(spec(batch_sizes=(8,)))
    assert not compile_ahead.wanted(spec(modes=("eager", "cuda-graph")))
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", "0")
    assert not compile_ahead.wanted(spec())


def test_auto_runs_helpers_on_a_fresh_host_only(tmp_path, monkeypatch):
    """auto, also where unset (the default): on where Inductor's FX graph cache holds no
    graph (a fresh host), off once it holds one, whatever its workload (there the helpers
    only cost time); forced on by 1 either way, off by 0; off where the FX graph cache
    itself is off."""
    monkeypatch.delenv("TORCHINDUCTOR_FX_GRAPH_CACHE", raising=False)
    cache = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    for setting in (None, "auto"):  # unset reads as auto
        if setting is None:
            monkeypatch.delenv("LAUNCHBENCH_COMPILE_AHEAD", raising=False)
        else:
            monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", setting)
        shutil.rmtree(cache, ignore_errors=True)
        assert compile_ahead.wanted(spec())  # no cache directory at all
        (cache / "fxgraph").mkdir(parents=True)
        assert compile_ahead.wanted(spec())  # an empty one
        (cache / "fxgraph" / "ab").mkdir()  # a graph of any workload
        assert not compile_ahead.wanted(spec())
        assert not compile_ahead.wanted(spec(device="cpu"))
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", "1")
    assert compile_ahead.wanted(spec())
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", "0")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "none"))
    assert not compile_ahead.wanted(spec())
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", "auto")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "empty"))
    assert compile_ahead.wanted(spec())
    monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    assert not compile_ahead.wanted(spec())


def test_the_default_cache_directory_is_inductors_own(tmp_path, monkeypatch):
    """TORCHINDUCTOR_CACHE_DIR unset: fresh_cache looks where Inductor itself writes its
    graphs (the temp directory moved into tmp_path, the environment a copy: nothing of
    the host's is read or written)."""
    import os

    # Its import makes the cache directory: the one named here, not the host's.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "at-import"))
    from torch._inductor.codecache import FxGraphCache

    monkeypatch.setattr("tempfile.gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr("os.environ", {k: v for k, v in os.environ.items()
                                       if k not in ("TORCHINDUCTOR_CACHE_DIR",
                                                    "TORCHINDUCTOR_FX_GRAPH_CACHE")})
    assert compile_ahead.fresh_cache()
    graphs = Path(FxGraphCache._get_tmp_dir())  # Inductor's own path (it sets the env)
    assert graphs.is_relative_to(tmp_path)
    del os.environ["TORCHINDUCTOR_CACHE_DIR"]
    (graphs / "ab").mkdir(parents=True)
    assert not compile_ahead.fresh_cache()


def test_a_helper_compiles_its_batch_sizes_into_the_shared_cache_and_ends(tmp_path,
                                                                          monkeypatch):
    """The helper runs the same compile as the sweep's point (here on the CPU, where
    Inductor writes C++ instead of Triton): after wait(), the cache holds its graph, and
    no helper is left running. The first batch size is the sweep's own: no helper gets it."""
    cache = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    ahead = compile_ahead.Ahead(spec(device="cpu", batch_sizes=(1, 8)))
    assert len(ahead.running) == 1
    procs = [p for p, _ in ahead.running]
    ahead.wait()
    assert not ahead.running and all(p.returncode == 0 for p in procs)
    assert any((cache / "fxgraph").rglob("*")), "the helper left no compiled graph"


def test_the_later_batch_sizes_are_shared_among_at_most_three_helpers(monkeypatch):
    started = []
    monkeypatch.setattr("runner.core.repeat.child",
                        lambda module, s, err, **kw: started.append(s.batch_sizes) or _Done())
    compile_ahead.Ahead(spec(batch_sizes=(1, 2, 4, 8, 16))).wait()
    assert started == [(2, 16), (4,), (8,)]


class _Done:
    returncode = 0
    stdin = None  # nothing to release

    def poll(self):
        return 0

    def wait(self, timeout=None):
        return 0


def test_a_held_helper_compiles_nothing_until_released(tmp_path, monkeypatch):
    """Held (the sweep reading its idle power), a helper only imports: a sweep that ends
    before releasing it (stdin closed, no go line) finds it ended on its own, with
    nothing compiled."""
    cache = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    ahead = compile_ahead.Ahead(spec(device="cpu", batch_sizes=(1, 8)))
    for proc, _ in ahead.running:
        proc.stdin.close()
    assert all(proc.wait(timeout=120) == 0 for proc, _ in ahead.running)
    ahead.close()
    assert not ahead.released and not list((cache / "fxgraph").rglob("*"))


def test_a_sweep_ending_early_kills_its_helpers_rather_than_waiting(tmp_path, monkeypatch):
    """close() (a cancelled or failed sweep) ends a helper still importing or compiling
    at once: nothing is left running, and the sweep does not wait out its compile."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    ahead = compile_ahead.Ahead(spec(device="cpu", batch_sizes=(1, 8)))
    procs = [p for p, _ in ahead.running]
    ahead.close()
    assert not ahead.running
    assert all(p.returncode is not None and p.returncode < 0 for p in procs)


@pytest.mark.parametrize("value", ["yes", "", "2", "AUTO"])
def test_a_setting_other_than_auto_1_or_0_is_refused_before_the_sweep_runs(monkeypatch, value):
    monkeypatch.setenv("LAUNCHBENCH_COMPILE_AHEAD", value)
    with pytest.raises(SpecError, match=f"LAUNCHBENCH_COMPILE_AHEAD={value!r}"):
        validate_spec(spec(device="cpu"))
