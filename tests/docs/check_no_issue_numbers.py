#!/usr/bin/env python3
"""Checks that code and docs describe features by what they are, not by the issue that brought
them: fails on "issue 12", "(issue 15, item 6)", "issues 12/13" and the like.

Usage: check_no_issue_numbers.py [REPO_ROOT]   (default: two directories above this script)
"""
import os
import re
import sys

# Searched paths, relative to the repository root (directories are searched recursively).
PATHS = ("src", "include", "apps", "docs", "bench", "README.md")
PATTERN = re.compile(r"\bissues?\s+#?[0-9]", re.IGNORECASE)
MAX_BYTES = 4 << 20  # larger files are data, not prose


def files(repo):
    for path in PATHS:
        full = os.path.join(repo, path)
        if os.path.isfile(full):
            yield full
        for dirpath, dirnames, filenames in os.walk(full):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                yield os.path.join(dirpath, name)


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), "..", ".."))
    hits = []
    for path in files(repo):
        if os.path.getsize(path) > MAX_BYTES:
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            if PATTERN.search(line):
                hits.append(f"{os.path.relpath(path, repo)}:{number}: {line.strip()}")
    if hits:
        print("check_no_issue_numbers: issue numbers found (say what the feature is instead):",
              file=sys.stderr)
        print("\n".join(hits), file=sys.stderr)
        return 1
    print(f"check_no_issue_numbers: ok ({', '.join(PATHS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
