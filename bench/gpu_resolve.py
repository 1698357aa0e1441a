"""The GPU machine's image and pip's resolution for it (issue 44): which packages numsweep needs
there that the image lacks, resolved for its CPython on manylinux x86-64 without touching this
machine's environment (`bench/gpu_kit.py` builds the kit from this)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
IMAGE_FILE = ROOT / "bench" / "gpu" / "image.txt"
# Stood in by an empty wheel: resolving the real one would pull its CUDA runtime wheels, which
# the image has (and which are gigabytes).
STAND_INS = ("torch",)


def manylinux_platforms() -> list[str]:
    """pip matches `--platform` tags exactly: every manylinux x86-64 tag a wheel may carry."""
    tags = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64"]
    tags += [f"manylinux_2_{n}_x86_64" for n in range(5, 40)]
    return [*tags, "linux_x86_64"]


def target_args(python: str) -> list[str]:
    """pip's options for wheels of CPython `python` (e.g. "3.12") on manylinux x86-64."""
    abi = "cp" + python.replace(".", "")
    args = ["--python-version", python, "--implementation", "cp", "--abi", abi, "--abi", "abi3"]
    args += ["--abi", "none"]
    for tag in manylinux_platforms():
        args += ["--platform", tag]
    return [*args, "--only-binary=:all:"]


def read_image(path: Path) -> dict[str, str | None]:
    """The image's packages: canonical name -> version (None where the list gives none)."""
    packages: dict[str, str | None] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name.strip()):
            raise ValueError(f"{path}:{number}: expected NAME or NAME==VERSION, got {raw!r}")
        packages[canonicalize_name(name)] = version.strip() or None
    return packages


def stand_in_wheel(folder: Path, name: str, version: str) -> Path:
    """An empty wheel `name==version+image` (metadata only): the resolver takes it as the
    image's package and resolves nothing below it. Never downloaded or packed."""
    version = f"{version}+image"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: numsweep\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = ""
    for member, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record += f"{member},sha256={digest.decode()},{len(text.encode())}\n"
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(zipfile.ZipInfo(member, (1980, 1, 1, 0, 0, 0)), text)
    return path


def _dry_run(
    requirements: Sequence[str], pins: dict[str, str], python: str, find_links: Path
) -> list[dict[str, str]]:
    """pip's `install --dry-run --report` for the target: [{name, version}]."""
    with tempfile.TemporaryDirectory() as scratch:
        stand_ins = Path(scratch, "stand-ins")
        stand_ins.mkdir()
        constraints = []
        for name, version in sorted(pins.items()):
            if name in STAND_INS:
                stand_in_wheel(stand_ins, name, version)
                version += "+image"
            constraints.append(f"{name}=={version}")
        constraint_file = Path(scratch, "image-constraints.txt")
        constraint_file.write_text("\n".join(constraints) + "\n")
        report = Path(scratch, "report.json")
        command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install"]
        command += ["--quiet", "--dry-run", "--ignore-installed", "--report", str(report)]
        command += [*target_args(python), "--find-links", str(find_links)]
        command += ["--find-links", str(stand_ins), "--constraint", str(constraint_file)]
        print("+ pip install --dry-run (the kit's resolution)", flush=True)
        subprocess.run([*command, *requirements], check=True, env=dict(os.environ))
        return [
            {
                "name": canonicalize_name(item["metadata"]["name"]),
                "version": item["metadata"]["version"],
            }
            for item in json.loads(report.read_text())["install"]
        ]


def resolve(
    requirements: Sequence[str],
    image: dict[str, str | None],
    python: str,
    torch_version: str,
    lock: Path,
    find_links: Path,
) -> list[dict[str, str]]:
    """pip's resolution of `requirements` for the target: [{name, version}], the image's
    versions pinned and torch stood in. Kept in `lock` with a key of its inputs: the same
    requirements, image and Python read the same versions from it (the lock is committed, so
    a kit built later or elsewhere has them too); changed inputs resolve anew and rewrite it."""
    pins = {name: version for name, version in image.items() if version}
    pins["torch"] = torch_version
    key = hashlib.sha256(
        json.dumps([list(requirements), sorted(pins.items()), python]).encode()
    ).hexdigest()[:16]
    if lock.is_file():
        locked = json.loads(lock.read_text())
        if locked["key"] == key:
            print(f"resolution: {lock.name} (its inputs unchanged)")
            return locked["install"]
    install = [
        {"name": p["name"], "version": p["version"]}
        for p in _dry_run(requirements, pins, python, find_links)
    ]
    lock.write_text(json.dumps({"key": key, "install": install}, indent=1) + "\n")
    print(f"resolution: resolved anew, written to {lock} (commit it)")
    return install


def tree_size(root: Path) -> int:
    """Bytes of what every device call sends besides its carry: tracked and untracked files
    that git does not ignore, and a shared/ folder in the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    files = [root / os.fsdecode(f) for f in listed if f]
    # `--cached` also lists a file deleted but not yet committed: it does not travel.
    total = sum(f.stat().st_size for f in files if f.is_file())
    shared = root / "shared"
    ignored = subprocess.run(["git", "check-ignore", "-q", "shared"], cwd=root, check=False)
    if shared.is_dir() and ignored.returncode == 0:
        total += sum(p.stat().st_size for p in shared.rglob("*") if p.is_file())
    return total
