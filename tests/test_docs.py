"""The docs a user reads hold together: the configuration reference is the config schema's own
page, and nothing a reader meets (README, docs/, mkdocs.yml, the presets, the code's comments
and docstrings) names an internal issue number, a folder of the machine it was written on, or
a file outside the repository."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from azero.config_docs import COMMAND, PAGE, configuration_page

REPO = Path(__file__).resolve().parent.parent


def test_the_configuration_page_is_generated_from_the_current_schema():
    committed = (REPO / PAGE).read_text(encoding="utf-8") if (REPO / PAGE).exists() else ""
    assert committed == configuration_page(), (
        f"{PAGE} is stale (a config field, its help or a preset changed): run `{COMMAND}` and commit the page")


def test_the_configuration_page_lists_every_key_with_its_help():
    from azero.config import help_text

    page = configuration_page()
    keys = re.findall(r"^  (\w+) = ", help_text(), flags=re.MULTILINE)
    sections = re.findall(r"^\[(\w+)\]$", help_text(), flags=re.MULTILINE)
    assert len(keys) > 50 and sections[:2] == ["game", "network"]
    for section in sections:
        assert f"## [{section}]" in page
    assert page.count("\n| `") >= len(keys)  # a row per key (and one per preset)
    assert "| `search.simulations` | `64` | 1 to 100,000,000 | search simulations per move in self-play |" in page
    assert "| `gomoku` | `gomoku:size=8,k=5` |" in page  # the presets, read from configs/


# -- what a reader must not meet -----------------------------------------------------------------------

# A reference to an internal issue or pull request: "issue 14", "issues 3 and 4", "#14", "PR 7",
# "the issue's figure". (`#` followed by digits only, not a colour such as #fff or an HTML entity.)
ISSUE = re.compile(r"\b(?:issues?|PR|pull request)\s+#?\d+|\bthe issue's\b|(?<![\w&#/])#\d{1,5}\b(?![\w-])",
                   re.IGNORECASE)
# A folder of one machine: the shared work folders, a user's home, a temporary folder in a command.
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|root)/|(?<![\w.])/home/\w+|\.\./shared\b")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)")


def _markdown_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += [REPO / name for name in ("CONTRIBUTING.md", "CHANGELOG.md", "mkdocs.yml")]
    files += sorted((REPO / "configs").glob("*.toml"))  # the presets' comments
    return [path for path in files if path.exists()]


def _comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python file."""
    source = path.read_text(encoding="utf-8")
    out = [(token.start[0], token.string) for token in tokenize.generate_tokens(io.StringIO(source).readline)
           if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                out.append((node.body[0].lineno, docstring))
    return out


def _texts() -> list[tuple[str, str]]:
    """(where, text) for everything the grep reads."""
    out = []
    for path in _markdown_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            out.append((f"{path.relative_to(REPO)}:{number}", line))
    for folder in ("azero", "games", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for number, text in _comments_and_docstrings(path):
                out.append((f"{path.relative_to(REPO)}:{number}", text))
    return out


def test_no_issue_numbers_machine_folders_or_links_outside_the_repository():
    found = []
    for where, text in _texts():
        for pattern, what in ((ISSUE, "an internal issue reference"), (MACHINE_PATH, "a machine's folder")):
            found += [f"{where}: {what}: {match.group(0)!r}" for match in pattern.finditer(text)]
    for path in _markdown_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for target in MARKDOWN_LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:|#", target):  # a URL or an anchor of the same page
                    continue
                resolved = (path.parent / target.split("#")[0]).resolve()
                if not resolved.is_relative_to(REPO):
                    found.append(f"{path.relative_to(REPO)}:{number}: a link outside the repository: {target}")
    assert not found, "what a reader cannot follow:\n" + "\n".join(found)


def test_the_grep_finds_what_it_is_meant_to():
    for text in ("fixed in issue 14", "see #14.", "the issue's figure", "Issues 3 and 4"):
        assert ISSUE.search(text), text
    for text in ("colour #fff", "#1f77b4", "#123456", "&#8212;", "a 5×5 board", "issues of timing", "gtp-rhino --level 3"):
        assert not ISSUE.search(text), text
    for text in ("cd /work/main && pytest", "--out /tmp/x", "/home/alice/azero", "[design](../shared/DESIGN.md)"):
        assert MACHINE_PATH.search(text), text
    for text in ("runs/<run>/latest.pt", "/usr/games", "tmp_path / 'run'"):
        assert not MACHINE_PATH.search(text), text


def _anchors(path: Path) -> set[str]:
    """The anchors of a Markdown page: its headings' slugs (as MkDocs and GitHub make them) and
    explicit `<a id="...">` names."""
    text = path.read_text(encoding="utf-8")
    slugs = {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading.strip().lower()))
             for heading in re.findall(r"^#+\s+(.+?)\s*#*$", text, flags=re.MULTILINE)}
    return slugs | set(re.findall(r"<a id=\"([^\"]+)\"", text))


def test_the_top_level_pages_link_to_files_and_headings_that_exist():
    # (the docs/ pages are checked by `mkdocs build --strict`; these pages are outside the site)
    broken = []
    for page in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md"):
        for number, line in enumerate((REPO / page).read_text(encoding="utf-8").splitlines(), 1):
            for target in MARKDOWN_LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):
                    continue
                name, _, anchor = target.partition("#")
                path = REPO / name if name else REPO / page
                if not path.exists():
                    broken.append(f"{page}:{number}: {target}: no such file")
                elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                    broken.append(f"{page}:{number}: {target}: no such heading or anchor")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_command_explains_itself_with_help():
    """`python scripts/X.py --help`, the first thing a newcomer types: each command answers with its
    usage and a description, exit code 0, and no stray format escape (argparse prints a
    description verbatim, so a "95%%" written there reaches the reader doubled)."""
    from azero.cli import ALIASES, COMMANDS
    from commands import run_here

    for name in sorted(set(COMMANDS) - set(ALIASES)):
        out = run_here(f"{name}.py", "--help", timeout=60)
        assert out.returncode == 0, (name, out.stderr)
        assert out.stdout.startswith("usage:") and "%%" not in out.stdout, (name, out.stdout)
