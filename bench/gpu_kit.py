"""Build the GPU check's offline kit: numsweep's run-time packages for the lent GPU machine, pre-
installed into one site folder and packed as one `tar.xz` that travels in the check's one device
call (issue 44; docs/gpu.md says how to run it).

    python bench/gpu_kit.py                 # -> .gpu-kit/numsweep-kit-cp312.tar.xz
    python bench/gpu_kit.py --check FILE    # only the size check of a kit file, nothing built

The GPU machine's image (`bench/gpu/image.txt`: CPython 3.12, CUDA torch, transformers, pyarrow,
scipy, …) lacks ray, deepspeed, optuna, polars and pydantic, and has no network. This script

1. resolves the run-time dependency closure of numsweep (pyproject's `dependencies` and its
   `sweep` extra) for CPython 3.12 on manylinux x86-64 with `uv pip compile --python-version 3.12
   --python-platform x86_64-manylinux_2_39` (from metadata: torch's CUDA wheels are resolved,
   not downloaded), pinned to the image's known versions; the versions are kept in the
   committed `bench/gpu/kit-lock-cp312.json` (re-resolved only when those inputs change);
2. downloads the wheels uv picks for that target of the packages the image lacks (less
   `NOT_NEEDED`), each checked against uv's sha256, DeepSpeed built from
   its sdist without compiled ops (`DS_BUILD_OPS=0`: the check's trials use torch's fused AdamW,
   `train.optimizer: torch_adamw`, so nothing is compiled there);
3. unpacks them `--no-deps` into one site folder and trims what numsweep never loads, each trim
   named with its saving;
4. packs the folder as one `tar.xz` (x86 BCJ filter, LZMA2 preset 9e) and refuses, exit 2, where
   the working tree plus the kit would not fit one device call (64 MiB).

Everything it downloads or builds stays under the git-ignored `.gpu-kit/`; downloads and the
DeepSpeed build are kept between runs. `bench/gpu_check.sh` unpacks the kit on the GPU machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

if not __package__:  # run as a file (`python bench/gpu_kit.py`): the checkout's packages
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.gpu_resolve import (
    IMAGE_FILE,
    fetch_wheels,
    read_image,
    resolve,
    tree_size,
)

ROOT = Path(__file__).resolve().parents[1]
KIT_DIR = ROOT / ".gpu-kit"
MIB = 2**20
# What one device call may carry: the working tree plus its carried paths.
CALL_LIMIT = 64 * MIB
PYTHON = "3.12"
KIT_NAME = f"numsweep-kit-cp{PYTHON.replace('.', '')}.tar.xz"
# The pinned versions: the resolution, committed (bench.gpu_resolve.resolve).
LOCK = ROOT / "bench" / "gpu" / f"kit-lock-cp{PYTHON.replace('.', '')}.json"
# Built from their sdist (no wheel on PyPI), with these settings.
SDIST_BUILDS = {"deepspeed": {"DS_BUILD_OPS": "0"}}
# In the closure, never loaded by `python -m orchestrator sweep bench/gpu/sweep.yaml` (the CPU
# proof runs that sweep, Ray's dashboard and the state API without them; bench/README.md): Ray's
# runtime-env pip support (virtualenv and what it pulls), its cloud-path opener and its stack
# sampler binary; Optuna's SQL storage, used by search sweeps only (the check's is a grid); the
# signing backend of google-auth, which Ray's metrics exporter (opencensus) pulls in and never
# calls. The last six are 9.8 MiB of wheels; the first kit built with them (polars' symbol
# table not yet stripped) was 57.3 MiB, 1.5 MiB over one call beside the 8.2 MiB tree.
NOT_NEEDED = {
    "virtualenv": "Ray's runtime_env pip/venv support; numsweep sets no pip runtime env",
    "distlib": "virtualenv's",
    "platformdirs": "virtualenv's",
    "python-discovery": "virtualenv's",
    "smart-open": "Ray's remote-path opener (s3://, gs://); results are local paths",
    "py-spy": "the `ray stack` / dashboard profiling binary; never started by a sweep",
    "sqlalchemy": "Optuna's RDB (SQLite) storage: search sweeps only",
    "alembic": "Optuna's RDB storage migrations",
    "mako": "alembic's",
    "cryptography": "google-auth's signing; Ray's opencensus exporter never signs",
    "cffi": "cryptography's",
    "pycparser": "cffi's",
}


def runtime_requirements(pyproject: Path) -> list[str]:
    """What `python -m orchestrator sweep` needs at run time: pyproject's dependencies (the
    analysis-only base install) and its `sweep` extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["sweep"]]


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, env={**os.environ, **(env or {})})


def build_sdist_wheels(wheels: Path, requirements: Sequence[str]) -> None:
    """Wheels of the requirements PyPI ships only as source (`SDIST_BUILDS`), built once."""
    for raw in requirements:
        req = Requirement(raw)
        settings = SDIST_BUILDS.get(canonicalize_name(req.name))
        if settings is None:
            continue
        versions = [str(s.version) for s in req.specifier if s.operator == "=="]
        if len(versions) != 1:
            raise ValueError(f"pyproject: {raw}: a package built from its sdist must pin ==")
        stem = f"{canonicalize_name(req.name).replace('-', '_')}-{versions[0]}-"
        if not list(wheels.glob(f"{stem}*.whl")):
            pip("wheel", "--no-deps", "--no-cache-dir", "-w", str(wheels), raw, env=settings)


def download(wheels: Path, packages: Sequence[dict[str, str]]) -> list[Path]:
    """Each package's wheel for the target in `wheels` (downloaded once; the sdist builds
    built there before); their paths."""
    fetch_wheels(wheels, [p for p in packages if p["name"] not in SDIST_BUILDS], PYTHON)
    found: dict[str, Path] = {}
    for path in wheels.glob("*.whl"):
        name, version, *_ = parse_wheel_filename(path.name)
        found[f"{name}=={version}"] = path
    missing = [
        f"{p['name']}=={p['version']}"
        for p in packages
        if f"{p['name']}=={p['version']}" not in found
    ]
    if missing:
        raise SystemExit(f"error: no wheel in {wheels} for {', '.join(missing)}")
    return [found[f"{p['name']}=={p['version']}"] for p in packages]


def install_wheel(wheel: Path, site: Path) -> None:
    """Unpack `wheel` into `site` as `pip install --no-deps --target` lays it out: the package
    and its dist-info; of its `.data/` folder only purelib and platlib (console scripts and
    headers are never used: the check runs `python -m`)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = member.filename.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            if any(part in ("", "..") for part in parts[:-1]) or member.filename.startswith("/"):
                raise ValueError(f"{wheel.name}: member {member.filename!r} leaves the folder")
            target = site.joinpath(*parts)
            if member.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out)
            mode = member.external_attr >> 16
            if mode & 0o111:
                target.chmod(0o755)


def folder_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def remove(paths: Sequence[Path]) -> int:
    """Delete `paths` (files or folders); the bytes they held."""
    freed = 0
    for path in paths:
        if path.exists():
            freed += folder_size(path)
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return freed


def is_elf(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(4) == b"\x7fELF"


def strip(paths: Sequence[Path], how: str = "--strip-debug") -> int:
    """`strip how` every ELF file of `paths`; the bytes saved. `--strip-debug` drops the DWARF
    and keeps the symbol table (Ray's C++ backtraces still name their functions);
    `--strip-unneeded` drops the symbol table too, keeping the dynamic symbols a shared object
    is loaded by."""
    before = sum(p.stat().st_size for p in paths)
    for path in paths:
        subprocess.run(["strip", how, str(path)], check=True)
    return before - sum(p.stat().st_size for p in paths)


def elf_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and is_elf(p))


def dashboard_build(site: Path) -> list[Path]:
    """The dashboard front end's build less `index.html`, `favicon.ico` and an empty `static/`:
    the dashboard server refuses to start without them, and with it the state API that Ray
    Train polls; the pages themselves are never opened on the GPU machine."""
    build = site / "ray" / "dashboard" / "client" / "build"
    keep = {"index.html", "favicon.ico", "static"}
    extra = [p for p in build.iterdir() if p.name not in keep] if build.is_dir() else []
    static = build / "static"
    return extra + (list(static.iterdir()) if static.is_dir() else [])


def trims(site: Path) -> list[tuple[str, Callable[[], int]]]:
    """The trims, in order: (name, a function doing it and returning the bytes it freed)."""
    ray = site / "ray"

    def glob_dirs(pattern: str) -> list[Path]:
        return sorted(p for p in site.rglob(pattern) if p.is_dir())

    def elf_of(top: Path) -> list[Path]:
        return elf_files(top) if top.is_dir() else []

    # polars' compiled engine is its own package (`_polars_runtime_32`).
    polars = [p for p in site.iterdir() if p.is_dir() and p.name.lstrip("_").startswith("polars")]
    others = [p for p in site.iterdir() if p.is_dir() and p.name != "ray" and p not in polars]
    return [
        ("ray/jars (Java, never used from Python)", lambda: remove([ray / "jars"])),
        (
            "ray/rllib and ray/llm (not imported by Tune or Train)",
            lambda: remove([ray / "rllib", ray / "llm"]),
        ),
        (
            "the dashboard front end but index.html, favicon.ico, static/",
            lambda: remove(dashboard_build(site)),
        ),
        ("tests folders", lambda: remove(glob_dirs("tests"))),
        ("source maps (*.map)", lambda: remove(sorted(site.rglob("*.map")))),
        ("ray: ELF debug symbols (strip --strip-debug)", lambda: strip(elf_of(ray))),
        (
            # Its engine ships no DWARF but a 40 MiB symbol table.
            "polars: ELF symbol tables (strip --strip-unneeded)",
            lambda: strip([p for top in polars for p in elf_of(top)], "--strip-unneeded"),
        ),
        (
            "the rest: ELF debug symbols (strip --strip-debug)",
            lambda: strip([p for top in others for p in elf_of(top)]),
        ),
    ]


def pack(site: Path, kit: Path) -> None:
    """`site`'s contents as `kit`, a tar.xz with the x86 BCJ filter before LZMA2 at preset 9e
    (the filter turns relative call addresses absolute, so the shared objects' machine code
    compresses better); members sorted with fixed times and owners, so the same folder packs
    to the same bytes."""

    def normalised(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
        return info

    filters = [
        {"id": lzma.FILTER_X86},
        {"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME},
    ]
    partial = kit.with_name(kit.name + ".partial")
    with (
        lzma.open(partial, "wb", format=lzma.FORMAT_XZ, filters=filters) as xz,
        tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for path in sorted(site.rglob("*")):
            if path.is_dir() and any(path.iterdir()):
                continue  # a folder's entry comes with its files; an empty one is kept
            archive.add(
                path, arcname=str(path.relative_to(site)), recursive=False, filter=normalised
            )
    partial.replace(kit)


def fit_error(tree: int, kit: int, largest: Sequence[tuple[int, str]]) -> str | None:
    """Why `tree` + `kit` bytes do not fit one device call (None where they do), naming the
    `largest` (bytes, name) parts of the kit as the first to drop."""
    over = tree + kit - CALL_LIMIT
    if over <= 0:
        return None
    names = ", ".join(f"{name} ({size / MIB:.1f} MiB)" for size, name in largest)
    return (
        f"error: the working tree ({tree / MIB:.1f} MiB) plus the kit ({kit / MIB:.1f} MiB) is "
        f"{(tree + kit) / MIB:.1f} MiB, {over / MIB:.1f} MiB over one device call's "
        f"{CALL_LIMIT // MIB} MiB: drop {over / MIB:.1f} MiB from the kit (its largest "
        f"packages: {names}; add one to NOT_NEEDED in bench/gpu_kit.py only where the CPU proof "
        "still passes without it) or from the tree (untracked files travel too)"
    )


def package_sizes(site: Path) -> list[tuple[int, str]]:
    """(bytes, top-level name) of the site folder's packages, largest first."""
    sizes = [(folder_size(p), p.name) for p in site.iterdir() if not p.name.endswith("-info")]
    return sorted(sizes, reverse=True)


def check(kit: Path, largest: Sequence[tuple[int, str]] = ()) -> int:
    """Exit status of the size check of `kit` against this checkout's working tree."""
    tree = tree_size(ROOT)
    error = fit_error(tree, kit.stat().st_size, largest)
    if error:
        print(error, file=sys.stderr)
        return 2
    room = CALL_LIMIT - tree - kit.stat().st_size
    print(
        f"fits one device call: tree {tree / MIB:.1f} MiB + kit {kit.stat().st_size / MIB:.1f} "
        f"MiB, {room / MIB:.1f} MiB to spare"
    )
    return 0


def wanted_packages(wheels: Path) -> list[dict[str, str]]:
    """The resolved closure less the image's packages and `NOT_NEEDED`, printed."""
    requirements = runtime_requirements(ROOT / "pyproject.toml")
    build_sdist_wheels(wheels, requirements)
    image = read_image(IMAGE_FILE)
    torch_version = image.get("torch")
    if not torch_version:
        raise SystemExit(f"error: {IMAGE_FILE}: give torch==VERSION (the image's torch)")
    install = resolve(requirements, image, PYTHON, torch_version, LOCK, wheels)
    wanted = [p for p in install if p["name"] not in image and p["name"] not in NOT_NEEDED]
    dropped = sorted(p["name"] for p in install if p["name"] in NOT_NEEDED)
    taken = sorted(f"{p['name']} {p['version']}" for p in install if p["name"] in image)
    print(f"from the image ({len(taken)}): {', '.join(taken)}")
    print(f"left out (NOT_NEEDED): {', '.join(dropped) or 'none'}")
    return wanted


def build(out: Path) -> Path:
    """Build the kit in `out`; its path."""
    wheels = out / f"wheels-cp{PYTHON.replace('.', '')}"
    wheels.mkdir(parents=True, exist_ok=True)
    packages = wanted_packages(wheels)
    paths = download(wheels, packages)
    total = sum(p.stat().st_size for p in paths)
    print(f"\n{len(paths)} wheels, {total / MIB:.1f} MiB:")
    for path in sorted(paths, key=lambda p: -p.stat().st_size):
        print(f"  {path.stat().st_size / MIB:6.1f} MiB  {path.name}")
    site = out / "site"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir()
    for path in paths:
        install_wheel(path, site)
    unpacked = folder_size(site)
    print(f"\ninstalled --no-deps: {unpacked / MIB:.1f} MiB; trims:")
    for name, trim in trims(site):
        print(f"  {trim() / MIB:6.1f} MiB  {name}", flush=True)
    print(f"trimmed: {folder_size(site) / MIB:.1f} MiB (from {unpacked / MIB:.1f})")
    manifest = {p["name"]: p["version"] for p in packages}
    (site / "numsweep-kit.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    kit = out / KIT_NAME
    print("packing (xz, x86 BCJ + LZMA2 preset 9e) ...", flush=True)
    pack(site, kit)
    digest = hashlib.sha256(kit.read_bytes()).hexdigest()
    print(f"kit: {kit.relative_to(ROOT)}, {kit.stat().st_size / MIB:.1f} MiB, sha256 {digest}")
    return kit


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", type=Path, metavar="KIT", help="only check KIT's size")
    args = parser.parse_args(argv)
    if args.check is not None:
        if not args.check.is_file():
            print(f"error: --check {args.check}: no such file", file=sys.stderr)
            return 2
        return check(args.check)
    # A trailing slash: a folder pattern matches a folder not made yet.
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{KIT_DIR}/"], cwd=ROOT, check=False)
    if ignored.returncode != 0:
        print(f"error: {KIT_DIR}: git does not ignore it (.gitignore)", file=sys.stderr)
        return 2
    kit = build(KIT_DIR)
    return check(kit, package_sizes(KIT_DIR / "site")[:4])


if __name__ == "__main__":
    sys.exit(main())
