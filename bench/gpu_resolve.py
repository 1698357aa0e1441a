"""The GPU machine's image and the resolution for it (issue 44): which packages numsweep needs
there that the image lacks, resolved for its CPython on manylinux x86-64 by `uv pip compile
--python-version … --python-platform …` from the packages' metadata, without touching this
machine's environment, and the wheel of each for that target (`bench/gpu_kit.py` builds the kit
from these)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
IMAGE_FILE = ROOT / "bench" / "gpu" / "image.txt"
# uv's target: manylinux wheels up to glibc 2.39, the newest tag the pip resolution this replaced
# accepted (its 35 `--platform` tags; uv picks the same 33 wheel files for the committed lock).
PLATFORM = "x86_64-manylinux_2_39"


def uv_bin() -> str:
    """The uv executable (`make venv` installs it into .venv)."""
    try:
        from uv import find_uv_bin
    except ImportError:
        found = shutil.which("uv")
        if found is None:
            raise SystemExit(
                "error: uv not found: `make venv` installs it (pip install uv)"
            ) from None
        return found
    return find_uv_bin()


def compile_target(
    requirements: Sequence[str],
    python: str,
    constraints: Sequence[str] = (),
    options: Sequence[str] = (),
) -> list[dict]:
    """`uv pip compile` of `requirements` for CPython `python` on `PLATFORM`, wheels only,
    `constraints` pinned, `options` passed on (`--find-links DIR`, `--no-deps`, `--no-index`):
    the packages of its pylock.toml (PEP 751), each with its name, version and the one wheel
    chosen for the target (url or path, sha256). uv reads metadata only: torch's CUDA wheels,
    which the image has, are resolved (and left out by the caller) without being downloaded."""
    with tempfile.TemporaryDirectory() as scratch:
        wanted = Path(scratch, "requirements.in")
        wanted.write_text("\n".join(requirements) + "\n")
        pinned = Path(scratch, "constraints.txt")
        pinned.write_text("\n".join(constraints) + "\n")
        lock = Path(scratch, "pylock.toml")
        command = [uv_bin(), "pip", "compile", "--quiet", "--format", "pylock.toml"]
        command += ["--python-version", python, "--python-platform", PLATFORM]
        command += ["--only-binary", ":all:", "--constraint", str(pinned), *options]
        print(
            f"+ uv pip compile --python-version {python} --python-platform {PLATFORM}", flush=True
        )
        subprocess.run([*command, "-o", str(lock), str(wanted)], check=True, env=dict(os.environ))
        return tomllib.loads(lock.read_text()).get("packages", [])


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


def resolve(
    requirements: Sequence[str],
    image: dict[str, str | None],
    python: str,
    torch_version: str,
    lock: Path,
    find_links: Path,
) -> list[dict[str, str]]:
    """uv's resolution of `requirements` for the target: [{name, version}], the image's
    versions pinned (torch's among them). Kept in `lock` with a key of its inputs: the same
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
    constraints = [f"{name}=={version}" for name, version in sorted(pins.items())]
    found = compile_target(requirements, python, constraints, ["--find-links", str(find_links)])
    install = [{"name": canonicalize_name(p["name"]), "version": p["version"]} for p in found]
    lock.write_text(json.dumps({"key": key, "install": install}, indent=1) + "\n")
    print(f"resolution: resolved anew, written to {lock} (commit it)")
    return install


def fetch_wheels(
    wheels: Path, packages: Sequence[dict[str, str]], python: str, options: Sequence[str] = ()
) -> list[Path]:
    """The wheel uv chooses for the target of each pinned package (`compile_target` with
    `--no-deps` and `options`), fetched into `wheels` once and checked against uv's sha256."""
    pins = [f"{p['name']}=={p['version']}" for p in packages]
    paths = []
    for package in compile_target(pins, python, options=["--no-deps", *options]):
        (wheel,) = package["wheels"]
        source = wheel.get("url") or Path(wheel["path"]).resolve().as_uri()
        target = wheels / Path(urllib.request.url2pathname(source.rsplit("/", 1)[1])).name
        if not target.is_file():
            print(f"+ fetch {target.name}", flush=True)
            partial = target.with_name(target.name + ".part")
            try:
                with (
                    urllib.request.urlopen(source, timeout=300) as response,
                    partial.open("wb") as out,
                ):
                    shutil.copyfileobj(response, out)
                partial.replace(target)
            finally:
                partial.unlink(missing_ok=True)
        digest = hashlib.sha256(target.read_bytes()).hexdigest()
        if digest != wheel["hashes"]["sha256"]:
            target.unlink()
            raise SystemExit(f"error: {target.name}: sha256 {digest}, uv's lock says otherwise")
        paths.append(target)
    return paths


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
