"""Copy docs/BENCHMARKS.md's headline into README.md's Results section, so a figure cannot say two things.

The headline (the table and the paragraph under it) lives between ``<!-- headline:start -->`` and
``<!-- headline:end -->`` in both files; docs/BENCHMARKS.md is where it is edited, README.md gets a copy.
``tests/test_docs.py`` fails while the two differ.

    python -m bench.readme            # rewrite README.md's copy from docs/BENCHMARKS.md
    python -m bench.readme --check    # only say whether the copy is current (exit status 1 when it is not)
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.common import DEFAULT_DOC, REPO_ROOT, command_parser, write_section

README = REPO_ROOT / "README.md"
SECTION = "headline"


def block(text: str, name: str = SECTION) -> str | None:
    """The text between ``<!-- {name}:start -->`` and ``<!-- {name}:end -->``, or None when a marker is missing."""
    found = re.search(rf"<!-- {name}:start -->\n(.*?)\n?<!-- {name}:end -->", text, re.S)
    return found.group(1).rstrip("\n") if found else None


def main(argv: list[str] | None = None, doc: Path = DEFAULT_DOC, readme: Path = README) -> int:
    parser = command_parser(__doc__, "bench.readme")
    parser.add_argument("--check", action="store_true", help="compare only; exit status 1 when README.md differs")
    args = parser.parse_args(argv)
    headline, copy = block(doc.read_text()), block(readme.read_text())
    for path, found in ((doc, headline), (readme, copy)):
        if found is None:  # write_section would append a new block: the copy belongs in the Results section
            raise SystemExit(f"{path} has no <!-- {SECTION}:start --> ... <!-- {SECTION}:end --> block; "
                             "put the two markers where the headline belongs, then rerun.")
    if copy == headline:
        print(f"{readme} carries the headline of {doc}")
        return 0
    if args.check:
        print(f"{readme}'s headline differs from {doc}'s: run python -m bench.readme")
        return 1
    write_section(readme, SECTION, headline)
    print(f"copied the headline of {doc} into {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
