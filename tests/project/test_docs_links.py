"""The Markdown files hold together: every relative link (and image) in every Markdown file of
the repository resolves to a file or folder, every `#anchor` into a Markdown file names one of its
headings (GitHub's slugs), and the top-level README stays a short map.

Links inside code (fenced blocks, `inline code`) are text, not links; `http(s):`, `mailto:` and
other links with a scheme are not checked (nothing outside the repository is reached)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)=["']([^"']+)["']""", re.I)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//")


def markdown_files(root: Path) -> list[Path]:
    """The repository's Markdown files: tracked ones and new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.md"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return sorted(root / name for name in listed if name and (root / name).is_file())


def _prose(text: str) -> str:
    """`text` without fenced code blocks and inline code (kept line for line)."""
    text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return _CODE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lower-cased, without punctuation (letters,
    digits, `_`, `-` and spaces stay), spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown text defines: heading slugs (repeats get -1, -2, …) and HTML
    `id` / `name` attributes."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    no_code = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for line in no_code.splitlines():
        heading = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            base = slug(heading.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    found.update(re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", no_code))
    return found


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """`file:line: target (why)` for every relative link that does not resolve."""
    broken = []
    for path in files:
        text = path.read_text()
        prose = _prose(text)
        for number, line in enumerate(prose.splitlines(), start=1):
            for target in _LINK.findall(line) + _HTML.findall(line):
                if _SCHEME.match(target):
                    continue
                file_part, _, fragment = target.partition("#")
                resolved = (path.parent / file_part).resolve() if file_part else path
                where = f"{path.relative_to(root)}:{number}: {target}"
                if not resolved.exists():
                    broken.append(f"{where} (no such file)")
                elif (
                    fragment
                    and resolved.suffix == ".md"
                    and resolved.is_file()
                    and fragment not in anchors(resolved.read_text())
                ):
                    broken.append(f"{where} (no heading #{fragment})")
    return broken


def test_every_relative_link_in_every_markdown_file_resolves():
    files = markdown_files(ROOT)
    assert ROOT / "README.md" in files and len(files) > 10
    assert broken_links(ROOT, files) == []


def test_the_checker_finds_missing_files_and_anchors(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# Running on a cluster\n\n## A trial against a plain loop (`python -m bench.trial`)\n"
        "## Notes\n## Notes\n"
    )
    (tmp_path / "fig.png").write_bytes(b"")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#running-on-a-cluster) ![fig](fig.png) [web](https://example.org/x)\n"
        "[code span](docs/a.md#a-trial-against-a-plain-loop-python--m-benchtrial)\n"
        '[second](docs/a.md#notes-1) [self](#top) <a name="top"></a>\n'
        "`[in code](missing.md)`\n```\n[in a block](missing.md)\n```\n"
        "[gone](docs/b.md) [bad anchor](docs/a.md#nope) ![gone too](img/x.png)\n"
    )
    broken = broken_links(tmp_path, [tmp_path / "README.md", tmp_path / "docs" / "a.md"])
    assert broken == [
        "README.md:8: docs/b.md (no such file)",
        "README.md:8: docs/a.md#nope (no heading #nope)",
        "README.md:8: img/x.png (no such file)",
    ]


def test_the_readme_is_a_short_map_that_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    first_block = re.search(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert [c for c in commands if c][:2] == ["make demo", "make test"]
