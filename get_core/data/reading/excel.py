"""Excel workbooks (.xlsx, .xlsm), read by openpyxl after every XML part was bounded (``upload_bounds``): the first
sheet, a title row above the header skipped, columns of formulas that were never computed named."""

from __future__ import annotations

import io
import re
import zipfile

import numpy as np
import pandas as pd

from get_core.data import upload_bounds
from get_core.data.columns import DataError
from get_core.data.reading import cells, limits

SUFFIXES = (".xlsx", ".xlsm")
SHARED_STRINGS_MB = 128  # the shared-strings part, which openpyxl holds whole
XML_CELL_BYTES = 64  # a numeric cell's XML at most (<c r="GR100002" s="12" t="n"><v>-1.2345678e-05</v></c>)
MAX_ZIP_RATIO = 100  # a part's expansion; openpyxl's own sheets of zeros expand 15 times


def read_excel(data: bytes, filename: str) -> pd.DataFrame:
    try:
        uncached = _check_workbook(data, filename)
        # cells as openpyxl gives them: a header 2019 over decimals must not become the float 2019.0
        raw = pd.read_excel(io.BytesIO(data), sheet_name=0, header=None, engine="openpyxl", nrows=limits.MAX_ROWS + 2,
                            dtype=object)
    except (DataError, MemoryError):
        raise
    except Exception as exc:  # openpyxl raises many types for a corrupt workbook; all mean the same to the user
        raise DataError(f"'{filename}' is not a readable Excel workbook ({type(exc).__name__}): "
                        "save it again as .xlsx or CSV.") from None
    raw = raw.dropna(how="all")
    blank = [j for j in raw.columns if raw[j].isna().all()]  # with their header: a formula never computed, maybe
    raw = raw.drop(columns=blank)
    filled = raw.notna().sum(axis=1).to_numpy()
    titles = int(np.argmax(filled > 1)) if raw.shape[1] > 1 and (filled > 1).any() else 0
    raw = raw.iloc[titles:]  # a title or note above the header fills one (merged) cell of its row
    if raw.empty:
        raise DataError(f"'{filename}' is empty: its first sheet has no header row and data rows.")
    header = [cells.column_name(v) if pd.notna(v) else f"Unnamed: {j}" for j, v in enumerate(raw.iloc[0])]
    limits.check_unique(header, filename)
    df = raw.iloc[1:].reset_index(drop=True)
    df.columns = header
    df = df.infer_objects()
    filled = {int(raw.columns[j]) for j, column in enumerate(df.columns) if df[column].notna().any()}
    names = {int(raw.columns[j]): name for j, name in enumerate(header)}
    df.attrs["uncached_formulas"] = [names.get(j, f"column {_column_letter(j)}")
                                     for j in (_formula_columns(data) if uncached else []) if j not in filled]
    return df


def _column_letter(index: int) -> str:
    """The spreadsheet's name of 0-based column ``index``: A, ..., Z, AA, ..."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _check_workbook(data: bytes, filename: str) -> bool:
    """The bounds of ``upload_bounds`` on every XML part, before openpyxl opens anything: what the zip declares
    (sizes, expansion), then each part streamed (text length, cells per row; the first sheet's rows, a title and a
    header above ``limits.MAX_ROWS``, stopping there). True if a formula has no value."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        xml_mb = (limits.MAX_CELLS + 2 * limits.MAX_COLUMNS) * XML_CELL_BYTES >> 20
        upload_bounds.check_zip(archive, filename, max_mb=xml_mb, max_strings_mb=SHARED_STRINGS_MB,
                                max_ratio=MAX_ZIP_RATIO, ratio_floor_mb=16)
        sheet = _first_sheet(archive)
        return any([upload_bounds.scan_xml(upload_bounds.member_chunks(archive, info, filename), filename,
                                           info.filename, *((limits.MAX_ROWS, 2) if info is sheet else ()))
                    for info in archive.infolist() if info.filename.lower().endswith((".xml", ".rels"))])


SHEET_ID = re.compile(rb"<(?:\w+:)?sheet\b[^>]*?\s(?:\w+:)?id=\"([^\"]+)\"")


def _first_sheet(archive: zipfile.ZipFile) -> zipfile.ZipInfo | None:
    """The zip part of the workbook's first sheet (what ``read_excel(sheet_name=0)`` reads): the first ``<sheet>`` of
    xl/workbook.xml, through its relationship id to xl/_rels/workbook.xml.rels."""
    names = {info.filename: info for info in archive.infolist()}
    try:
        book = b"".join(upload_bounds.member_chunks(archive, names["xl/workbook.xml"], "workbook"))
        rels = b"".join(upload_bounds.member_chunks(archive, names["xl/_rels/workbook.xml.rels"], "workbook"))
    except KeyError:
        return names.get("xl/worksheets/sheet1.xml")
    found = SHEET_ID.search(book)
    if found is None:
        return None
    rel = re.search(rb"<(?:\w+:)?Relationship\b[^>]*\bId=\"" + re.escape(found.group(1)) + rb"\"[^>]*>", rels)
    target = rel and re.search(rb"\bTarget=\"([^\"]+)\"", rel.group(0))
    if not target:
        return None
    path = target.group(1).decode("utf-8", "replace")
    return names.get(path.lstrip("/") if path.startswith("/") else f"xl/{path}")


def _formula_columns(data: bytes) -> list[int]:
    """The sheet columns (0-based) holding a formula: a workbook written by a program rather than saved by a
    spreadsheet has no computed values to read, so such columns look empty, or are cut off when they come last."""
    import openpyxl

    found: set[int] = set()
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=False)
    try:
        for row in book.worksheets[0].iter_rows(max_row=limits.MAX_ROWS + 2, values_only=True):
            found.update(i for i, value in enumerate(row) if isinstance(value, str) and value.startswith("="))
    finally:
        book.close()
    return sorted(found)
