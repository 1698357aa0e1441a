"""Fixtures shared by the orchestrator's tests: `s3`, a local S3-compatible server
(`tests.orchestrator.s3_server`), started once per module that asks for it."""

from tests.orchestrator.s3_server import s3  # noqa: F401 (a fixture, found here by pytest)
