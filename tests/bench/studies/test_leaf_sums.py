"""bench.studies.leaf_sums: one table row per feature count, and the engine's block size restored after timing."""

from bench.studies import leaf_sums
from get_core.engine import leaves


def test_the_study_prints_a_row_per_feature_count_and_restores_the_block_size(capsys):
    block = leaves._BLOCK_ROWS
    leaf_sums.main(["--features", "2", "7", "--rows", "300", "--depth", "2", "--models", "2", "--repeats", "1"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split("|")[1].strip() for row in rows] == ["2", "7"]
    assert all(float(row.split("|")[4]) > 0 for row in rows)
    assert leaves._BLOCK_ROWS == block
