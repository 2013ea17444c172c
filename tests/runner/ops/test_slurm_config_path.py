"""Where the admin's Slurm file is looked for: `slurm.toml` beside app.py (README,
slurm.example.toml), and the default workdir on compute nodes is that same checkout."""

from __future__ import annotations

from pathlib import Path

from runner.ops import slurm
from tests.conftest import ROOT


def test_default_config_is_beside_app_py(monkeypatch):
    monkeypatch.delenv(slurm.CONFIG_VAR, raising=False)
    path = slurm.config_path()
    assert path == ROOT / "slurm.toml"
    assert (path.parent / "app.py").is_file()
    assert (path.parent / "slurm.example.toml").is_file()


def test_default_workdir_is_the_checkout(tmp_path):
    path = tmp_path / "slurm.toml"
    path.write_text("[gpu_types.v100]\ngres = true\n")
    cfg = slurm.load_config(path)
    # `-m runner` resolves from the workdir: it must hold the runner package.
    assert Path(cfg.workdir) == ROOT
    assert (Path(cfg.workdir) / "runner" / "__main__.py").is_file()


def test_env_var_overrides_default(monkeypatch, tmp_path):
    monkeypatch.setenv(slurm.CONFIG_VAR, str(tmp_path / "elsewhere.toml"))
    assert slurm.config_path() == tmp_path / "elsewhere.toml"
