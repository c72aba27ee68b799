"""Delimited text (CSV, TSV, space-aligned UCI tables): the delimiter detected or chosen, UTF-8, UTF-16 or
Windows-1252, decimal commas and thousands dots in ";" files, ragged lines and row labels named by their line."""

from __future__ import annotations

import csv
import io
import re
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from get_core.data.columns import DataError
from get_core.data.reading import cells, limits

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe", " ": "space"}  # " ": any run of blanks
SUFFIXES = (".csv", ".tsv", ".txt", ".dat", ".data")  # .dat/.data: UCI's plain-text tables
SNIFF_CHARS = 65_536  # the start of a text file read to find its delimiter and header
MISSING_MARKERS = ["?"]  # besides pandas' defaults (empty, NA, NaN, null, ...); UCI files mark missing with "?"

_DECIMAL_COMMA = re.compile(r"[-+]?([0-9]{1,3}(\.[0-9]{3})+|[0-9]+)(,[0-9]+)?([eE][-+]?[0-9]+)?")
_THOUSANDS = re.compile(r"[-+]?[1-9][0-9]{0,2}(,[0-9]{3})+")  # never 0,125: a decimal comma
_THOUSANDS_DOTS = re.compile(r"[-+]?[1-9][0-9]{0,2}(\.[0-9]{3})+")


def read_csv(data: bytes, filename: str, delimiter: str | None, training: bool) -> pd.DataFrame:
    text = _line_ends(_decode(data, filename))
    _refuse_nul(text, filename)
    sample = text if len(text) <= SNIFF_CHARS else text[:SNIFF_CHARS].rsplit("\n", 1)[0]
    if delimiter is None:
        delimiter = _sniff_delimiter(sample)
    elif delimiter not in DELIMITERS:
        raise DataError(f"Unknown delimiter {delimiter!r}: choose one of {', '.join(map(repr, DELIMITERS))}.")
    lead = _blank_lead(sample, delimiter)
    records = _records(sample, delimiter)
    header = records[0]
    _check_header_width(text, delimiter, lead, header, filename)
    if len(header) < 2 and training:
        others = [d for d in DELIMITERS if d not in (delimiter, " ") and d in header[0]]
        hint = (f"the header contains a {DELIMITERS[others[0]]} ({others[0]!r}): choose it as the delimiter"
                if others else
                "GET needs a target and at least one feature column; check the file's delimiter")
        raise DataError(f"Only one column ('{header[0].strip()[:60]}') was found using the "
                        f"{DELIMITERS[delimiter]} delimiter; {hint}.")
    names = [cells.column_name(h) for h in header]
    blank_tail = len(names) - len(_without_blank_tail(names))  # "a,b,c,," : a spreadsheet's empty columns
    limits.check_unique(names[:len(names) - blank_tail], filename)
    options = _row_label_options(text, filename, delimiter, lead, header, records[1:])
    if options.get("index_col") is False:  # pandas would cut a line with more fields short, with only a warning
        found = _ragged_record(text, delimiter, lead, len(header), blank_tail=True)
        if found is not None:
            raise _ragged_error(filename, delimiter, *found, len(header))
    df = _parse_csv(text, filename, delimiter, lead, **options)
    df.columns = [cells.column_name(c) for c in df.columns]
    df.attrs["delimiter"] = delimiter
    empty_tail = [c for c in df.columns[df.shape[1] - blank_tail:] if df[c].isna().all()] if blank_tail else []
    df = df.drop(columns=empty_tail)
    df.attrs["multiline"] = _multiline_cells(df)
    if delimiter == ",":
        return df
    return _decimal_commas(df, delimiter, lambda: _parse_csv(text, filename, delimiter, lead, dtype=str, **options))


def _line_ends(text: str) -> str:
    """Lines end with "\n": Windows' "\r\n" and classic Mac OS's lone "\r" become "\n". Whichever of lone "\r"
    and "\n" is the more common ends the lines: a few lone "\r" in a file of "\n" lines (a stray one in a name) are
    spaces, as they are in a quoted name, and a few "\n" in a file of "\r" lines (a last line's, a quoted cell's)
    stay line breaks."""
    text = text.replace("\r\n", "\n")
    if "\r" in text:
        text = text.replace("\r", "\n" if text.count("\r") > text.count("\n") else " ")
    return text


def _check_header_width(text: str, delimiter: str, lead: int, header: list[str], filename: str) -> None:
    """Refuse a header of more than ``limits.MAX_COLUMNS`` names before pandas parses a row: a header line of a
    million names would take minutes. The sniffed header may be cut at ``SNIFF_CHARS``; the count comes from the
    whole first line."""
    if len(_without_blank_tail([h.strip() for h in header])) <= limits.MAX_COLUMNS:
        return
    start = 0
    for _ in range(lead):
        start = text.index("\n", start) + 1
    end = text.find("\n", start)
    line = text[start:end if end >= 0 else len(text)]
    limits.check_size(0, len(_without_blank_tail([h.strip() for h in _records(line, delimiter, limit=1)[0]])), filename)


def _multiline_cells(df: pd.DataFrame) -> tuple[int, int, str] | None:
    """(cells, first row, its column) of text cells holding a line break. Quoted text may span lines, but so does
    everything after an unbalanced quote, which silently merges rows: the page points at the first such cell."""
    first, count = None, 0
    for column in cells.text_columns(df):
        codes, values = pd.factorize(df[column])
        broken = cells.per_row(codes, np.array(["\n" in str(v) for v in values], dtype=bool))
        if broken.any():
            count += int(broken.sum())
            row = int(np.flatnonzero(broken)[0]) + 1
            first = (row, column) if first is None or row < first[0] else first
    return (count, *first) if first else None


def _refuse_nul(text: str, filename: str) -> None:
    """A NUL character: near the start, a binary file; further in, a damaged one, whose column would silently turn
    into text (pandas reads the NUL as a character). Either way there is no table to read."""
    at = text.find("\x00")
    if 0 <= at < 4096:
        raise DataError(f"'{filename}' is not a text file: upload CSV, Parquet or Excel (.xlsx).")
    if at >= 0:
        line = text.count("\n", 0, at) + 1
        raise DataError(f"'{filename}' holds a NUL character (byte 0) on line {line:,}: a text table never does, so the"
                        " file is damaged or not text; remove it, or export the table again.")


def _decode(data: bytes, filename: str) -> str:
    """UTF-8 (with or without BOM), UTF-32 or UTF-16 with a BOM (Excel's "Unicode Text"), else Windows-1252 (Excel's CSV
    export on Windows: euro sign, typographic quotes), else Latin-1, which decodes any bytes."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        try:
            return data.decode("utf-32")
        except UnicodeDecodeError:
            raise DataError(f"'{filename}' starts like UTF-32 text but is not: save it as UTF-8 CSV.") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise DataError(f"'{filename}' starts like UTF-16 text but is not: save it as UTF-8 CSV.") from None
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            pass
    return data.decode("latin-1")


def _without_blank_tail(names: list[str]) -> list[str]:
    while names and not names[-1]:
        names = names[:-1]
    return names


def _parse_csv(text: str, filename: str, delimiter: str, lead: int, **options: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(io.StringIO(text), sep=r"\s+" if delimiter == " " else delimiter,
                           na_values=MISSING_MARKERS, skipinitialspace=True, skiprows=lead, nrows=limits.MAX_ROWS + 1,
                           engine="c", low_memory=False, **options)
    except pd.errors.ParserError as exc:
        match = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if match:
            expected, seen = int(match[1]), int(match[3])
            row, line, _ = _ragged_record(text, delimiter, lead, expected) or (int(match[2]) - 1 - lead, match[2], 0)
            raise _ragged_error(filename, delimiter, row, line, seen, expected) from None
        raise DataError(f"'{filename}' could not be read as {DELIMITERS[delimiter]}-separated text ({exc}); "
                        "check the delimiter and quoting.") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"'{filename}' is empty: choose a file with a header row and data rows.") from None


def _ragged_record(text: str, delimiter: str, lead: int, expected: int,
                   blank_tail: bool = False) -> tuple[int, int, int] | None:
    """(data row, physical line, fields) of the first record with more than ``expected`` fields (``blank_tail``:
    with a non-blank one beyond them, as "1,2,3," is not). Rows are counted as the rest of the app counts them
    (blank lines are not rows) and lines as an editor does (a quoted cell may span lines); pandas' own line number
    counts blank lines but not lines inside quotes."""
    rows = -1  # the header is row 0
    try:
        for start, end, record in _numbered_records(text, delimiter):
            if end <= lead or not record:
                continue
            if len(record) > expected and not (blank_tail and not any(f.strip() for f in record[expected:])):
                return rows + 1, start, len(record)
            rows += 1
    except csv.Error:
        return None
    return None


def _row_label_options(text: str, filename: str, delimiter: str, lead: int, header: list[str],
                       rows: list[list[str]]) -> dict[str, Any]:
    """pandas takes the first field of every line as a row label when the first data line has one field more than
    the header, and shifts every column left. Right for R's write.table (every line starts with its label), wrong
    for lines that end with a delimiter (a spreadsheet's export: read without labels; ``read_csv`` refuses a line
    among them whose extra fields are not empty, naming it) and for one long line among short ones (refused,
    naming it)."""
    longer = [row for row in rows if len(row) == len(header) + 1]
    if not longer:
        return {}
    if 2 * sum(not row[-1].strip() for row in longer) > len(longer):  # mostly "1,2,3,": not labels, all shifted
        return {"index_col": False}
    if len(longer) == len(rows):
        return {}
    row, line, _ = _ragged_record(text, delimiter, lead, len(header)) or (1, lead + 2, 0)
    raise _ragged_error(filename, delimiter, row, line, len(header) + 1, len(header))


def _ragged_error(filename: str, delimiter: str, row: int, line: int | str, seen: int, expected: int) -> DataError:
    return DataError(f"Row {row} (line {line} of '{filename}') has {seen} fields but the header has {expected}: "
                     f"fix that line, or check the delimiter (now {DELIMITERS[delimiter]}).", row=row)


def _numbered_records(text: str, delimiter: str) -> Iterator[tuple[int, int, list[str]]]:
    """(first line, last line, fields) of every record; a blank line is an empty record."""
    if delimiter == " ":  # no quoting: a record is a line
        for number, line in enumerate(text.splitlines(), start=1):
            yield number, number, line.split()
        return
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True)
    end = 0
    for record in reader:
        yield end + 1, reader.line_num, record
        end = reader.line_num


def _decimal_commas(df: pd.DataFrame, delimiter: str, as_text: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """Columns written with a decimal comma (``1,5``, ``-1.234,5``: the CSV export of European spreadsheets, which
    separate fields with ";") become numbers; their names go to ``df.attrs["decimal_comma"]`` so the page can say
    so. Never in comma-separated files; in tab or pipe files not when every comma is followed by exactly three
    digits (``1,234``, ``12,000``), which there more likely separates thousands. In a ";" file that uses decimal
    commas, a column whose every dot is followed by exactly three digits (``1.250``) holds thousands separators
    too (read as 1250, not 1.25) when it also has plain numbers (``850``) or two groups (``12.000.000``); it is
    listed with them. ``as_text`` gives the raw cells of columns pandas already read as numbers."""
    converted = []
    for column in df.columns:
        if pd.api.types.is_numeric_dtype(df[column]):
            continue
        text = df[column].astype("string").str.strip()
        present = text.dropna()
        commas = present[present.str.contains(",", regex=False)]
        thousands = delimiter != ";" and commas.str.fullmatch(_THOUSANDS).all()
        if len(commas) and not thousands and present.str.fullmatch(_DECIMAL_COMMA).all():
            df[column] = _european_numbers(text)
            converted.append(column)
    if converted and delimiter == ";":
        raw = None
        for column in df.columns:
            if column in converted or pd.api.types.is_integer_dtype(df[column]):
                continue
            if pd.api.types.is_float_dtype(df[column]):
                raw = as_text() if raw is None else raw
                text = raw.iloc[:, df.columns.get_loc(column)].astype("string").str.strip()
            else:
                text = df[column].astype("string").str.strip()
            present = text.dropna()
            dots = present.str.count(r"\.")
            # Thousands only where the column also holds plain numbers under 1000 (850 beside 1.250) or a second
            # group (12.000.000): a column of 48.137, 52.520 may well be decimals written the English way.
            evident = (dots == 0).any() or (dots > 1).any()
            dotted = present[dots > 0]
            if len(dotted) and evident and dotted.str.fullmatch(_THOUSANDS_DOTS).all() and present.str.fullmatch(
                    _DECIMAL_COMMA).all():
                df[column] = _european_numbers(text)
                converted.append(column)
    df.attrs["decimal_comma"] = converted
    return df


def _european_numbers(text: pd.Series) -> pd.Series:
    """``-1.234,5`` -> -1234.5: dots separate thousands, the comma is the decimal point."""
    numbers = text.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    return pd.to_numeric(numbers).astype(np.float64)


def _sniff_delimiter(sample: str) -> str:
    """The candidate that splits the header and nearly every sampled record (all but one in ten) into the same
    number (>1) of fields, most fields first: one malformed line must not hide the delimiter, since the message
    naming that line can only come once the file is read with the right one."""
    best, best_fields = ",", 1
    for delimiter in DELIMITERS:
        rows = _records(sample, delimiter)
        fields = len(rows[0])
        fit = sum(len(r) == fields or (len(r) == fields + 1 and not r[-1].strip()) for r in rows)  # "1;2;3;"
        if fields > best_fields and fit >= 0.9 * len(rows):
            best, best_fields = delimiter, fields
    return best


def _blank_lead(sample: str, delimiter: str) -> int:
    """How many lines before the header hold nothing but delimiters (``;;;`` above a spreadsheet's export)."""
    lead = 0
    for line in sample.splitlines():
        if line.replace(delimiter, "").strip():
            break
        lead += 1
    return lead


def _records(sample: str, delimiter: str, limit: int = 50) -> list[list[str]]:
    """The first non-blank CSV records of ``sample``; a record may span lines (a quoted header cell that wraps)."""
    if delimiter == " ":  # columns aligned by spaces (UCI's .data and .txt files): no quoting
        return [line.split() for line in sample.splitlines() if line.strip()][:limit] or [[""]]
    records = []
    try:
        for row in csv.reader(io.StringIO(sample), delimiter=delimiter):
            if any(cell.strip() for cell in row):
                records.append(row)
                if len(records) == limit:
                    break
    except csv.Error:  # an unbalanced quote under this delimiter: what was read so far still counts
        pass
    return records or [[""]]
