"""Test-wide settings: this machine reaches no model hub, so the Hugging Face libraries are told
so up front (a hub id must then be in the local cache, else a clear error at once)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
