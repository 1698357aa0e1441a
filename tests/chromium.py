"""A real headless Chromium for the tests that render pages (the HTML report, optuna-dashboard):
Debian's `chromium` package, installed with apt-get when missing, and the flags it runs with."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def ensure_chromium() -> str:
    """The chromium binary, installed from Debian's `chromium` package when missing."""
    found = shutil.which("chromium")
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        pytest.skip("chromium missing and no root apt-get to install Debian's chromium package")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:  # stale package lists: refresh once and retry
        subprocess.run(["apt-get", "update"], capture_output=True, env=env, timeout=900)
        done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=1800)
    assert done.returncode == 0, f"apt-get install chromium failed:\n{done.stderr[-3000:]}"
    found = shutil.which("chromium")
    assert found, "chromium installed but not on PATH"
    return found


# Written into a copy of the page (next to it, so relative paths resolve the same way): after
# load, record how many <img> elements there are and how many decoded to a non-zero width.
