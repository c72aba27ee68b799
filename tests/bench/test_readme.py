"""python -m bench.readme copies the benchmark page's headline into README.md, and only that block."""

import pytest

from bench import readme

PAGE = "# Benchmarks\n\n<!-- headline:start -->\n| area | figure |\n|---|---|\n| speed | 19x |\n<!-- headline:end -->\n"


def files(tmp_path, readme_text: str):
    doc, target = tmp_path / "BENCHMARKS.md", tmp_path / "README.md"
    doc.write_text(PAGE)
    target.write_text(readme_text)
    return doc, target


def test_the_copy_replaces_only_the_block_and_check_then_passes(tmp_path):
    doc, target = files(tmp_path, "# App\n\n## Results\n\n<!-- headline:start -->\n| old |\n<!-- headline:end -->\n\n"
                                   "## Set-up\n")
    assert readme.main(["--check"], doc=doc, readme=target) == 1
    assert readme.main([], doc=doc, readme=target) == 0
    text = target.read_text()
    assert readme.block(text) == readme.block(PAGE) and "| old |" not in text
    assert text.startswith("# App\n\n## Results\n") and text.endswith("## Set-up\n")
    assert readme.main(["--check"], doc=doc, readme=target) == 0


def test_a_readme_without_the_markers_is_refused_with_what_to_do(tmp_path):
    doc, target = files(tmp_path, "# App\n\n## Results\n")
    with pytest.raises(SystemExit, match="no <!-- headline:start -->.*put the two markers"):
        readme.main([], doc=doc, readme=target)
    assert target.read_text() == "# App\n\n## Results\n"
