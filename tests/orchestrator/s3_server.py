"""A local S3-compatible server for the tests that put results on object storage: moto's
standalone server, its own process on 127.0.0.1, with a bucket `numsweep`. Credentials go to the
standard AWS_* variables and the server's address to AWS_ENDPOINT_URL, for this process and the
commands it starts, as a user's environment would hold them.

moto's server runs from its own virtualenv (`make s3-server`: moto pins botocore, which pins
python-dateutil below 3) and is found as `moto_server` there or on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests.servers import free_port, stop, wait_http
from tests.sweep_runs import ROOT


def moto_server() -> str:
    for candidate in (ROOT / ".venv-s3" / "bin" / "moto_server", shutil.which("moto_server")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("moto_server not found: `make s3-server` installs it into .venv-s3")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The endpoint of a fresh S3-compatible server with a bucket `numsweep`."""
    tmp = tmp_path_factory.mktemp("s3")
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tmp / "moto.log"
    proc = subprocess.Popen(
        [moto_server(), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wait_http(f"{endpoint}/moto-api/", proc)
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # for this process's readers and the commands it starts
    pafs.S3FileSystem(endpoint_override=endpoint, allow_bucket_creation=True).create_dir("numsweep")
    yield endpoint
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    stop(proc)


def s3_keys(prefix: str) -> list[str]:
    """Every object under `prefix` (an s3:// URI), as bucket/key paths."""
    fs, base = pafs.FileSystem.from_uri(prefix)
    try:
        infos = fs.get_file_info(pafs.FileSelector(base, recursive=True))
    except FileNotFoundError:
        return []
    return [i.path for i in infos if i.type == pafs.FileType.File]
