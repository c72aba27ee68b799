"""CSV files the app writes for a spreadsheet to open.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel and LibreOffice
(``=HYPERLINK("http://...","click")`` in an uploaded table would come back live in its scored copy). OWASP's rule for
CSV injection: write such a cell with a leading ``'``, which the spreadsheet shows as text and does not evaluate. A
cell that is a number as written (``-5``, ``+1.5e3``) is not a formula and is left alone, so numbers stay numbers.
"""

from __future__ import annotations

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text == text.strip()  # float() skips blanks: "\t5" is a tab-led cell, not the number 5


def safe_cell(value: object) -> object:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula; anything else as is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def csv_bytes(table: pd.DataFrame) -> bytes:
    """``table`` as UTF-8 CSV without its index, every formula-like text cell and column name escaped."""
    safe = table.rename(columns=safe_cell)
    text_columns = [c for c in range(safe.shape[1]) if not pd.api.types.is_numeric_dtype(safe.dtypes.iloc[c])]
    for c in text_columns:
        safe.isetitem(c, safe.iloc[:, c].astype(object).map(safe_cell))
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8")  # CRLF (RFC 4180): a cell holding
    # a lone CR is quoted too
