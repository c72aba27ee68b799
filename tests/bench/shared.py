"""Helpers of the bench tests: small tables made in tmp_path, and a skip for tests that need the shared datasets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.common import DEFAULT_DATA_DIR


def needs_datasets(*names: str) -> pytest.MarkDecorator:
    """Skip unless these CSV files of ../shared/datasets are there (they are not part of the repository)."""
    missing = [n for n in names if not (DEFAULT_DATA_DIR / f"{n}.csv").exists()]
    return pytest.mark.skipif(bool(missing), reason=f"no shared datasets in {DEFAULT_DATA_DIR}")


def tables(tmp_path: Path, *names: str) -> Path:
    """A folder ``tmp_path/data`` with one 40-row table (features a, b and a target) per name."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for name in names:
        pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "target"]).to_csv(data / f"{name}.csv", index=False)
    return data
