"""The benchmark page stays one a reviewer reads, and README.md cannot quote a figure the page does not.

docs/BENCHMARKS.md had grown to 2,280 lines, and one figure (prediction against the forest) read 12x, 14.3x and
17-19x in three places (issue 46). The headline block is edited in docs/BENCHMARKS.md and copied into README.md by
``python -m bench.readme``.
"""

import re

from bench.common import DEFAULT_DOC
from bench.readme import README, block

MAX_LINES = 600
#: a number or a range of numbers with its unit where it has one: 1,000,000, 83.07, 17-19x, 97.2%
FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?(?:-\d[\d,]*(?:\.\d+)?)?(?:x|%)?")


def figures(text: str) -> set[str]:
    """Every figure in ``text``, thousands separators dropped (1,000,000 and 1000000 are one figure)."""
    return {figure.replace(",", "") for figure in FIGURE.findall(text)}


def results_section(readme: str) -> str:
    """README.md from its "## Results" heading to the next "## " heading."""
    start = readme.index("## Results\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end >= 0 else None]


def test_the_benchmark_page_has_at_most_600_lines():
    lines = DEFAULT_DOC.read_text().count("\n")
    assert lines <= MAX_LINES, (f"docs/BENCHMARKS.md has {lines} lines (at most {MAX_LINES}): replace a superseded "
                                "figure instead of adding beside it, and move long studies to results/ as data")


def test_the_readme_results_are_the_benchmark_headline_word_for_word():
    headline = block(DEFAULT_DOC.read_text())
    assert headline and headline.startswith("| area |"), "docs/BENCHMARKS.md lost its headline block"
    assert block(results_section(README.read_text())) == headline, \
        "README.md's Results differ from docs/BENCHMARKS.md's headline: run python -m bench.readme"


def test_figures_keep_their_ranges_and_units():
    assert figures("17-19x the forest's 1,751 MB; 97.2% of 12 datasets") == {"17-19x", "1751", "97.2%", "12"}


def test_the_prose_around_the_headline_quotes_only_the_headline_tables_figures():
    headline = block(DEFAULT_DOC.read_text())
    table = "\n".join(line for line in headline.splitlines() if line.startswith("|"))
    prose = "\n".join(line for line in headline.splitlines() if not line.startswith("|"))
    readme_around = results_section(README.read_text()).replace(block(README.read_text()) or "", "")
    for where, text in (("the headline's paragraph", prose), ("README.md's Results section", readme_around)):
        stray = figures(text) - figures(table)
        assert not stray, f"{where} quotes {sorted(stray)}, which the headline table does not have"


def test_every_result_file_is_indexed_and_every_cited_one_exists():
    results = DEFAULT_DOC.parents[1] / "results"
    index = (results / "INDEX.md").read_text()
    unindexed = [p.name for p in sorted(results.iterdir()) if p.is_file() and p.name != "INDEX.md"
                 and f"`{p.name}`" not in index]
    assert not unindexed, f"results/INDEX.md does not say what wrote {unindexed} (add a row)"
    pages = DEFAULT_DOC.read_text() + README.read_text()
    cited = set(re.findall(r"results/([\w.*-]+\.(?:jsonl|json|txt|cpp|md))", pages))
    missing = sorted(name for name in cited if not list(results.glob(name)))
    assert not missing, f"docs/BENCHMARKS.md or README.md cites results/{missing}, which are not there"
