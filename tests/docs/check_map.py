#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md stays a map that fits on a screen.

Fails when a directory under src/, include/farmem/ or apps/ is not named in the map's
"Directory map" section (by its path in backticks, with or without a trailing slash, e.g.
`src/kv/service/`), or when ARCHITECTURE.md is longer than MAX_LINES lines.

Usage: check_map.py [REPO_ROOT]   (default: two directories above this script)
"""
import os
import re
import sys

MAX_LINES = 300
ROOTS = ("src", "include/farmem", "apps")
SECTION = "## Directory map"


def directories(repo):
    """Every directory below ROOTS (not the roots themselves), as repo-relative paths."""
    found = []
    for root in ROOTS:
        top = os.path.join(repo, root)
        for dirpath, dirnames, _ in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            for d in dirnames:
                found.append(os.path.relpath(os.path.join(dirpath, d), repo).replace(os.sep, "/"))
    return found


def map_section(text):
    """The lines of the "Directory map" section, up to the next level-2 heading."""
    lines = text.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == SECTION)
    except StopIteration:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def named_paths(section):
    """Paths named in backticks, normalised: no leading ./, no trailing /."""
    names = set()
    for span in re.findall(r"`([^`]+)`", section):
        span = span.strip()
        if span.startswith("./"):
            span = span[2:]
        names.add(span.rstrip("/"))
    return names


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    path = os.path.join(repo, "docs", "ARCHITECTURE.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    failures = []
    line_count = len(text.rstrip("\n").split("\n"))
    if line_count > MAX_LINES:
        failures.append(f"docs/ARCHITECTURE.md has {line_count} lines; the map must stay within "
                        f"{MAX_LINES} (move detail to docs/modules/<module>.md)")
    section = map_section(text)
    if section is None:
        failures.append(f'docs/ARCHITECTURE.md has no "{SECTION}" section')
    else:
        named = named_paths(section)
        missing = [d for d in directories(repo) if d not in named]
        if missing:
            failures.append(
                f'directories not named in the "{SECTION[3:]}" section of docs/ARCHITECTURE.md '
                "(name each in backticks, e.g. `src/x/`):\n" +
                "\n".join(f"  {d}/" for d in missing))
    for failure in failures:
        print(f"check_map: {failure}", file=sys.stderr)
    if not failures:
        print(f"check_map: ok ({line_count} lines; every directory of "
              f"{', '.join(ROOTS)} is on the map)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
