"""The dashboard's Streamlit settings (.streamlit/config.toml), as Streamlit itself reads
them from the repository: the settings that bench/page_speed.py found cost a reader time
stay off (bench/results/page_speed.txt)."""

from pathlib import Path

import pytest
from streamlit import config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def options(monkeypatch):
    """Streamlit's options parsed from the repository's config file (its own parser, so a
    misspelt section or key reads as the default and fails below)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(config, "_config_options", None)
    config.get_config_options(force_reparse=True)
    yield config.get_option
    config.get_config_options(force_reparse=True)


def test_no_file_watcher_and_no_magic_in_the_product(options):
    # The watcher cost each new browser session ~0.27 s before its script started.
    assert options("server.fileWatcherType") == "none"
    assert options("runner.magicEnabled") is False
    assert options("runner.postScriptGC") is False


def test_the_dashboard_listens_on_this_machine_only(options):
    assert options("server.address") == "127.0.0.1"
    assert options("server.headless") is True
    assert options("browser.gatherUsageStats") is False
