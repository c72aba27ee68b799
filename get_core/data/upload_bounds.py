"""Checks that bound what reading an upload may cost, run before anything is expanded (issue 18).

A 1 MB workbook can hold a 1.2 GB string, a 58 KB Parquet file 6 GB of text: the file's size says nothing about its
cost. These checks read only what the file declares (zip directory, Parquet footer) or stream it in 1 MB pieces,
and refuse with a sentence naming what is too large. Limits come from the caller (``reading``); the bounds that
come from the formats themselves are here.
"""

from __future__ import annotations

import re
import zipfile
from typing import Iterator

import numpy as np

from get_core.data.columns import DataError

CHUNK = 1 << 20
EXCEL_CELL_CHARS = 32_767  # Excel's own limit on the text of one cell
EXCEL_ROW_CELLS = 16_384  # Excel's own limit on the cells of one row (columns A to XFD)
XML_CHAR_BYTES = 6  # the most bytes one character takes in XML text: an entity such as &quot;
MAX_XML_TEXT = EXCEL_CELL_CHARS * XML_CHAR_BYTES + 1024  # + the attributes of the tag before it
_CELL_TAGS = (b"<c ", b"<c>", b"<c/>")
#: a cell's value: <v>, or an inline string's <is>, with or without a namespace prefix (<x:v>)
_VALUE_TAGS = (b"<v>", b"<v ", b"<is>", b":v>", b":is>")
# a cell that ends after its formula, or after an empty value: <f>A2*2</f></c>, <f t="shared" si="0"/></c>, <v /></c>
_UNCACHED = (b"</f></c>", b'"/></c>', b"<v /></c>", b"<v/></c>", b"<v></v></c>")
_PANDAS_INDEX = re.compile(r"__index_level_\d+__")  # an unnamed pandas index stored by to_parquet


def check_zip(archive: zipfile.ZipFile, filename: str, *, max_mb: int, max_strings_mb: int, max_ratio: int,
              ratio_floor_mb: int) -> None:
    """Refuse a workbook whose parts declare more than ``max_mb`` in all, a shared-strings part (which openpyxl
    holds in memory whole) over ``max_strings_mb``, or a part over ``ratio_floor_mb`` that expands more than
    ``max_ratio`` times (a spreadsheet's XML expands 5 to 20 times, a zip bomb up to 1000 times)."""
    total = 0
    for info in archive.infolist():
        total += info.file_size
        if info.filename.lower().endswith("sharedstrings.xml") and info.file_size > max_strings_mb << 20:
            raise DataError(f"'{filename}' holds {info.file_size / 2**20:,.0f} MB of text cells; the limit is "
                            f"{max_strings_mb} MB: drop text columns the model does not need, or upload CSV.")
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > ratio_floor_mb << 20 and ratio > max_ratio:
            raise DataError(f"'{filename}' is a zip bomb, not a workbook: its part '{info.filename}' expands "
                            f"{ratio:,.0f} times, to {info.file_size / 2**20:,.0f} MB. Save it again from Excel "
                            "or LibreOffice, or upload CSV.")
    if total > max_mb << 20:
        raise DataError(f"'{filename}' expands to {total / 2**20:,.0f} MB of XML; the limit is {max_mb:,} MB: "
                        "sample rows or drop columns first, or upload CSV or Parquet.")


def member_chunks(archive: zipfile.ZipFile, info: zipfile.ZipInfo, filename: str) -> Iterator[bytes]:
    """The part's bytes in 1 MB pieces, never more than it declares: a part that lies about its size is refused
    (zipfile also stops at the declared size; this does not rely on it)."""
    read = 0
    with archive.open(info) as member:
        while chunk := member.read(CHUNK):
            read += len(chunk)
            if read > info.file_size:
                raise DataError(f"'{filename}' is damaged: its part '{info.filename}' holds more than it declares. "
                                "Save it again from Excel or LibreOffice.")
            yield chunk


def scan_xml(chunks: Iterator[bytes], filename: str, part: str, max_rows: int | None = None,
             head_rows: int = 0) -> bool:
    """Refuse XML with a text longer than a spreadsheet cell can hold or a row of more cells than a sheet can
    have: the two ways a small workbook makes openpyxl build gigabytes (one string, one row element); with
    ``max_rows``, a sheet of more rows holding a value (besides ``head_rows`` above them: a title, the header),
    refused as soon as the stream passes them, not after openpyxl parsed a million of them (the sheet's optional
    ``<dimension>`` tag is not trusted: a 50-row sheet may declare A1:XFD1048576). True if a cell may hold a formula
    without a computed value (``_UNCACHED``; a false alarm only costs a second look).

    Streams the part once, at about 300 MB/s: each piece is cut before its last '<', so every tag it keeps is
    whole, and what follows that '<' is carried into the next piece."""
    carry, row_cells, row_values, n_rows, uncached = b"", 0, 0, 0, False
    for chunk in chunks:
        buffer = carry + chunk
        cut = max(buffer.rfind(b"<"), 0)
        body, carry = buffer[:cut], buffer[cut:]
        if len(carry) > MAX_XML_TEXT:
            raise _long_text(filename, part)
        marks = np.flatnonzero(np.frombuffer(body, np.uint8) == ord("<"))
        if len(marks) and np.diff(marks, append=len(body)).max() > MAX_XML_TEXT:
            raise _long_text(filename, part)
        uncached = uncached or any(mark in body for mark in _UNCACHED)
        rows = body.split(b"</row>")
        for index, row in enumerate(rows):
            if index:  # the row before this piece closed
                n_rows += row_values > 0
                if max_rows is not None and n_rows > max_rows + head_rows:
                    raise DataError(f"'{filename}' has more than {max_rows:,} rows: sample it down to at most "
                                    f"{max_rows:,} rows first.")
                row_cells = row_values = 0
            row_cells += sum(row.count(tag) for tag in _CELL_TAGS)
            row_values += max_rows is not None and any(tag in row for tag in _VALUE_TAGS)
            if row_cells > EXCEL_ROW_CELLS:
                raise DataError(f"'{filename}' has a row of more than {EXCEL_ROW_CELLS:,} cells, more than a "
                                "spreadsheet can hold; the limit is far lower, 200 columns: keep the target and "
                                "the features you need.")
    return uncached


def _long_text(filename: str, part: str) -> DataError:
    return DataError(f"'{filename}' holds a text longer than {EXCEL_CELL_CHARS:,} characters (in '{part}'), more "
                     "than a spreadsheet cell can hold: it was not saved by Excel or LibreOffice. Shorten that "
                     "cell, or upload the table as CSV.")


def table_columns(schema) -> list[str]:
    """The columns a Parquet file gives the app: its fields but an unnamed pandas index (a named one is data)."""
    return [field.name for field in schema if not _PANDAS_INDEX.fullmatch(str(field.name))]


def check_parquet_types(schema, filename: str) -> None:
    """Refuse nested columns (list, struct, map, union) by name: a table cell must hold one value."""
    import pyarrow as pa

    for field in schema:
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_nested(kind) or pa.types.is_union(kind):
            raise DataError(f"Column '{field.name}' of '{filename}' holds {_nested_kind(kind)} ({kind}), not one "
                            "value per cell: drop it, or spread it into one column per item, before uploading.",
                            column=str(field.name))


def _nested_kind(kind) -> str:
    import pyarrow as pa

    for test, name in [(pa.types.is_map, "maps"), (pa.types.is_struct, "records (struct)"),
                       (pa.types.is_union, "unions")]:
        if test(kind):
            return name
    return "lists"


def parquet_decoded_mb(metadata) -> float:
    """The uncompressed size of every column chunk, as the footer declares it. Plain and dictionary pages are
    held in memory at about that size when read with ``read_dictionary`` (dictionary pages stay a dictionary)."""
    total = sum(metadata.row_group(g).column(c).total_uncompressed_size
                for g in range(metadata.num_row_groups) for c in range(metadata.num_columns))
    return total / 2**20
