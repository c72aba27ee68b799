"""User files in: CSV/TSV/space-aligned text, Parquet and Excel parsed into a DataFrame the app can type.

Uploaded files are data, never code: text is parsed as text, Parquet by pyarrow, Excel by openpyxl; nothing is
ever unpickled or evaluated. Every refusal is a ``get_core.data.columns.DataError`` naming the file, column or row.

Limits: ``MAX_UPLOAD_MB`` per file (``server.maxUploadSize`` in ``.streamlit/config.toml``), and
``limits.MAX_ROWS`` data rows, ``limits.MAX_COLUMNS`` columns and ``limits.MAX_CELLS`` cells; a table to train on
needs ``columns.MIN_ROWS`` rows.

One module per format behind ``read_table``: ``delimited`` (CSV, TSV, space-aligned text), ``parquet``, ``excel``;
``cells`` holds the clean-up every table goes through, ``limits`` the size limits and the checks of a table's shape.

What a spreadsheet export needs and gets: the delimiter detected (or chosen), Windows-1252 and UTF-16 text,
decimal commas and thousands dots in ";" files, numbers formatted for display (``$1,200``, ``12%``) read as the
numbers they show, cells of only spaces missing, empty trailing columns and rows dropped, a title row above an
Excel header skipped. What the page should warn about goes to ``df.attrs``: ``decimal_comma`` and ``formatted``
(columns converted), ``multiline`` (a cell with a line break: maybe an unbalanced quote), ``uncached_formulas``.
"""
from __future__ import annotations

import logging
from pathlib import PurePath

import pandas as pd

from get_core.data.columns import DataError
from get_core.data.confined import ChildFailed, ConfinedError, run_confined
from get_core.data.reading import cells, delimited, excel, limits, parquet

_LOG = logging.getLogger(__name__)
# A CSV of 1,000,000 x 11 numbers in [0, 1] is 95 MB at 6 significant digits, 203 MB at full float precision (what
# pandas writes by default): the upload limit takes the latter; the read stays within the limits (BENCHMARKS.md)
MAX_UPLOAD_MB = 256  # keep equal to server.maxUploadSize in .streamlit/config.toml
READ_MEMORY_MB = 2048  # the reading process (read_table_bounded): memory beyond its start, and time
READ_SECONDS = 900  # a legitimate 100,000 x 200 workbook takes openpyxl minutes on a busy 2-core machine
RESULT_MB = 256  # the table handed back to the server, pickled
SUFFIXES = (*delimited.SUFFIXES, *parquet.SUFFIXES, *excel.SUFFIXES)


def read_table(data: bytes, filename: str, *, delimiter: str | None = None, training: bool = True) -> pd.DataFrame:
    """Parse an uploaded file (CSV/TSV/TXT, Parquet, Excel .xlsx) into a DataFrame with unique string columns.

    ``delimiter`` (CSV only) is one of ``delimited.DELIMITERS`` or None to detect it from the first records. A table to train
    on (``training``) needs ``columns.MIN_ROWS`` rows (and, read as text, two columns: a target and a feature); rows to
    score need neither.
    """
    suffix = PurePath(filename).suffix.lower()
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError(f"'{filename}' is larger than {MAX_UPLOAD_MB} MB: sample rows or drop columns first.")
    if not data.strip():
        raise DataError(f"'{filename}' is empty: choose a file with a header row and data rows.")
    if suffix in parquet.SUFFIXES:
        df = parquet.read_parquet(data, filename)
    elif suffix in excel.SUFFIXES:
        df = excel.read_excel(data, filename)
    elif suffix == ".xls":
        raise DataError(f"'{filename}' is an old .xls workbook: save it as .xlsx or CSV and upload that.")
    elif suffix in (*delimited.SUFFIXES, ""):
        df = delimited.read_csv(data, filename, delimiter, training)
    else:
        raise DataError(f"'{filename}' has an unsupported type '{suffix}': upload one of {', '.join(SUFFIXES)}.")
    df = cells.formatted_numbers(cells.without_empty_tail(cells.blank_cells_missing(df)))
    return limits.check_shape(df, filename, training, text=suffix in (*delimited.SUFFIXES, ""))


def read_table_bounded(data: bytes, filename: str, *, delimiter: str | None = None,
                       training: bool = True) -> pd.DataFrame:
    """``read_table`` in a child process limited to ``READ_MEMORY_MB`` and ``READ_SECONDS``, handing back at most
    ``RESULT_MB``: what the pages call, so that a file the checks in ``read_table`` do not foresee still cannot
    exhaust the server. A limit reached is a ``DataError`` that says which."""
    try:
        return run_confined(read_table, data, filename, delimiter=delimiter, training=training, expected=(DataError,),
                            memory_mb=READ_MEMORY_MB, seconds=READ_SECONDS, result_mb=RESULT_MB)
    except ConfinedError as exc:
        raise DataError(_limit_message(filename, exc)) from None
    except ChildFailed as exc:  # a reader bug or a damage no check foresaw: the user still gets a sentence
        _LOG.error("reading %r failed in the child: %s", filename, exc)
        raise DataError(f"'{filename}' could not be read ({exc}). If it opens in another program, save it again "
                        "as CSV and upload that.") from None


def _limit_message(filename: str, exc: ConfinedError) -> str:
    if exc.limit == "time":
        return (f"Reading '{filename}' took more than {exc.amount:g} seconds and was stopped: sample rows or drop "
                "columns, or save it as CSV or Parquet.")
    if exc.limit == "crash":
        return (f"Reading '{filename}' stopped: the file is damaged, or it needs more than {READ_MEMORY_MB:,} MB of "
                "memory. Save it again (CSV or Parquet) and upload that.")
    if exc.limit == "result":
        return (f"'{filename}' takes {exc.amount:,.0f} MB of memory once read; the limit is {RESULT_MB} MB: drop "
                "text columns the model does not need, or sample rows.")
    return (f"'{filename}' needs more than {exc.amount:,.0f} MB of memory to read and was stopped: sample rows or "
            "drop columns, or save it again as CSV.")
