"""User files in: CSV/TSV/space-aligned text, Parquet and Excel parsed into a DataFrame the app can type.

Uploaded files are data, never code: text is parsed as text, Parquet by pyarrow, Excel by openpyxl; nothing is
ever unpickled or evaluated. Every refusal is a ``get_core.data.columns.DataError`` naming the file, column or row.

Limits: ``MAX_UPLOAD_MB`` per file (``server.maxUploadSize`` in ``.streamlit/config.toml``), ``MAX_ROWS`` data rows,
``MAX_COLUMNS`` columns and ``MAX_CELLS`` cells, and a table to train on needs ``data.MIN_ROWS`` rows.

What a spreadsheet export needs and gets: the delimiter detected (or chosen), Windows-1252 and UTF-16 text,
decimal commas and thousands dots in ";" files, numbers formatted for display (``$1,200``, ``12%``) read as the
numbers they show, cells of only spaces missing, empty trailing columns and rows dropped, a title row above an
Excel header skipped. What the page should warn about goes to ``df.attrs``: ``decimal_comma`` and ``formatted``
(columns converted), ``multiline`` (a cell with a line break: maybe an unbalanced quote), ``uncached_formulas``.
"""
from __future__ import annotations

import csv
import logging
import io
import re
import zipfile
from pathlib import PurePath
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from get_core.data import upload_bounds
from get_core.data.confined import ChildFailed, ConfinedError, run_confined
from get_core.data.columns import MIN_ROWS, ColumnKind, DataError, column_kind

_LOG = logging.getLogger(__name__)
# A CSV of 1,000,000 x 11 numbers in [0, 1] is 95 MB at 6 significant digits, 203 MB at full float precision (what
# pandas writes by default): the upload limit takes the latter; the read stays within the limits below (BENCHMARKS.md)
MAX_UPLOAD_MB = 256  # keep equal to server.maxUploadSize in .streamlit/config.toml
MAX_ROWS = 1_000_000  # training samples rows beyond config.AUTO_SAMPLE_ABOVE (issue 21)
MAX_COLUMNS = 200
#: Rows x columns: the largest table of issue 18 (100,000 x 200), so the bounds below, set for it, hold for every
#: shape, 1,000,000 x 20 as well.
MAX_CELLS = 20_000_000
# What reading may cost, whatever the file declares (issue 18). A full table of 20,000,000 floats is 153 MB.
DECODED_MB = 512  # Parquet: column data once decompressed (the footer's sizes, then what was read)
SHARED_STRINGS_MB = 128  # Excel: the shared-strings part, which openpyxl holds whole
XML_CELL_BYTES = 64  # Excel: a numeric cell's XML at most (<c r="GR100002" s="12" t="n"><v>-1.2345678e-05</v></c>)
MAX_ZIP_RATIO = 100  # Excel: a part's expansion; openpyxl's own sheets of zeros expand 15 times
READ_MEMORY_MB = 2048  # the reading process (read_table_bounded): memory beyond its start, and time
READ_SECONDS = 900  # a legitimate 100,000 x 200 workbook takes openpyxl minutes on a busy 2-core machine
RESULT_MB = 256  # the table handed back to the server, pickled

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe", " ": "space"}  # " ": any run of blanks
TEXT_SUFFIXES = (".csv", ".tsv", ".txt", ".dat", ".data")  # .dat/.data: UCI's plain-text tables
SUFFIXES = (*TEXT_SUFFIXES, ".parquet", ".pq", ".xlsx", ".xlsm")
SNIFF_CHARS = 65_536  # the start of a text file read to find its delimiter and header
MISSING_MARKERS = ["?"]  # besides pandas' defaults (empty, NA, NaN, null, ...); UCI files mark missing with "?"
# [0-9], not \d: \d also matches other scripts' digits (١٢, fullwidth １２), which pandas cannot convert
_DECIMAL_COMMA = re.compile(r"[-+]?([0-9]{1,3}(\.[0-9]{3})+|[0-9]+)(,[0-9]+)?([eE][-+]?[0-9]+)?")
_THOUSANDS = re.compile(r"[-+]?[1-9][0-9]{0,2}(,[0-9]{3})+")  # never 0,125: a decimal comma
_FORMATTED = re.compile(r"[$€£¥]?\s?[-+]?\s?[$€£¥]?\s?([1-9][0-9]{0,2}(,[0-9]{3})+|[0-9]+)(\.[0-9]+)?\s?[%$€£¥]?")
_THOUSANDS_DOTS = re.compile(r"[-+]?[1-9][0-9]{0,2}(\.[0-9]{3})+")


def read_table(data: bytes, filename: str, *, delimiter: str | None = None, training: bool = True) -> pd.DataFrame:
    """Parse an uploaded file (CSV/TSV/TXT, Parquet, Excel .xlsx) into a DataFrame with unique string columns.

    ``delimiter`` (CSV only) is one of ``DELIMITERS`` or None to detect it from the first records. A table to train
    on (``training``) needs ``MIN_ROWS`` rows (and, read as text, two columns: a target and a feature); rows to
    score need neither.
    """
    suffix = PurePath(filename).suffix.lower()
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise DataError(f"'{filename}' is larger than {MAX_UPLOAD_MB} MB: sample rows or drop columns first.")
    if not data.strip():
        raise DataError(f"'{filename}' is empty: choose a file with a header row and data rows.")
    if suffix in (".parquet", ".pq"):
        df = _read_parquet(data, filename)
    elif suffix in (".xlsx", ".xlsm"):
        df = _read_excel(data, filename)
    elif suffix == ".xls":
        raise DataError(f"'{filename}' is an old .xls workbook: save it as .xlsx or CSV and upload that.")
    elif suffix in (*TEXT_SUFFIXES, ""):
        df = _read_csv(data, filename, delimiter, training)
    else:
        raise DataError(f"'{filename}' has an unsupported type '{suffix}': upload one of {', '.join(SUFFIXES)}.")
    return _check_shape(_formatted_numbers(_without_empty_tail(_blank_cells_missing(df))), filename, training,
                        text=suffix in (*TEXT_SUFFIXES, ""))


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


def _text_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if df[c].dtype == object or isinstance(df[c].dtype, pd.StringDtype)]


def _per_row(codes: np.ndarray, per_value: np.ndarray) -> np.ndarray:
    """A per-distinct-value flag spread over the rows (``codes`` from ``pd.factorize``; -1, missing, is False).
    The checks below look at each distinct cell once: a 100,000-row column usually holds a few dozen."""
    return np.append(per_value, False)[codes]


def _blank_cells_missing(df: pd.DataFrame) -> pd.DataFrame:
    """Cells holding only spaces are missing values, as an unquoted empty CSV field is (a spreadsheet shows both
    as empty), never a category '' or a non-number. A TRUE/FALSE column with empty cells (pandas reads it as
    objects) becomes nullable booleans, numeric like the same column without gaps."""
    for column in _text_columns(df):
        codes, values = pd.factorize(df[column])
        blank = np.array([isinstance(v, str) and not v.strip() for v in values], dtype=bool)
        if blank.any():
            df[column] = df[column].mask(_per_row(codes, blank)).infer_objects()
        kept = [v for v, b in zip(values, blank) if not b]
        # factorize takes 0 == False and 1 == True as one value: only a column of real booleans is converted
        if kept and all(isinstance(v, (bool, np.bool_)) for v in kept) and \
                all(isinstance(v, (bool, np.bool_)) for v in df[column].dropna()):
            df[column] = df[column].astype("boolean")
    return df


def _formatted_numbers(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns whose every cell is a number formatted for display (``$1,200.50``, ``12%``, ``-€3.5``, ``1,234``:
    a spreadsheet's CSV export of formatted cells) become those numbers, as written (12% -> 12); their names go to
    ``df.attrs["formatted"]`` so the page can say so. Otherwise they would be one-hot encoded as categories or
    refused as text. Not where a comma may be a decimal comma (";"-separated files)."""
    converted = []
    for column in _text_columns(df):
        codes, values = pd.factorize(df[column])
        present = pd.Series(values, dtype=object).astype("string").str.strip()
        european = df.attrs.get("delimiter") == ";" and present.str.contains(",", regex=False).any()
        if len(present) and not european and present.str.fullmatch(_FORMATTED).all() and present.str.contains(
                r"[,%$€£¥]").any():
            numbers = pd.to_numeric(present.str.replace(r"[\s,%$€£¥]", "", regex=True)).to_numpy(np.float64)
            df[column] = np.append(numbers, np.nan)[codes]
            converted.append(column)
    df.attrs["formatted"] = converted
    return df


def _without_empty_tail(df: pd.DataFrame) -> pd.DataFrame:
    """Without the rows at the end where every cell is missing (";;;" lines below a spreadsheet's export): they
    carry no data, and scored on Predict they would get imputed values. Rows above keep their numbers."""
    filled = np.flatnonzero(df.notna().any(axis=1).to_numpy())
    return df.iloc[:filled[-1] + 1] if len(filled) else df.iloc[:0]


def _read_csv(data: bytes, filename: str, delimiter: str | None, training: bool) -> pd.DataFrame:
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
    names = [_column_name(h) for h in header]
    blank_tail = len(names) - len(_without_blank_tail(names))  # "a,b,c,," : a spreadsheet's empty columns
    _check_unique(names[:len(names) - blank_tail], filename)
    options = _row_label_options(text, filename, delimiter, lead, header, records[1:])
    if options.get("index_col") is False:  # pandas would cut a line with more fields short, with only a warning
        found = _ragged_record(text, delimiter, lead, len(header), blank_tail=True)
        if found is not None:
            raise _ragged_error(filename, delimiter, *found, len(header))
    df = _parse_csv(text, filename, delimiter, lead, **options)
    df.columns = [_column_name(c) for c in df.columns]
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
    """Refuse a header of more than ``MAX_COLUMNS`` names before pandas parses a row: a header line of a million
    names would take minutes. The sniffed header may be cut at ``SNIFF_CHARS``; the count comes from the whole
    first line."""
    if len(_without_blank_tail([h.strip() for h in header])) <= MAX_COLUMNS:
        return
    start = 0
    for _ in range(lead):
        start = text.index("\n", start) + 1
    end = text.find("\n", start)
    line = text[start:end if end >= 0 else len(text)]
    _check_size(0, len(_without_blank_tail([h.strip() for h in _records(line, delimiter, limit=1)[0]])), filename)


def _multiline_cells(df: pd.DataFrame) -> tuple[int, int, str] | None:
    """(cells, first row, its column) of text cells holding a line break. Quoted text may span lines, but so does
    everything after an unbalanced quote, which silently merges rows: the page points at the first such cell."""
    first, cells = None, 0
    for column in _text_columns(df):
        codes, values = pd.factorize(df[column])
        broken = _per_row(codes, np.array(["\n" in str(v) for v in values], dtype=bool))
        if broken.any():
            cells += int(broken.sum())
            row = int(np.flatnonzero(broken)[0]) + 1
            first = (row, column) if first is None or row < first[0] else first
    return (cells, *first) if first else None


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
                           na_values=MISSING_MARKERS, skipinitialspace=True, skiprows=lead, nrows=MAX_ROWS + 1,
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
    for lines that end with a delimiter (a spreadsheet's export: read without labels; ``_read_csv`` refuses a line
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


def _column_name(name: Any) -> str:
    """A header cell as the app shows it: one line, single spaces (a wrapped spreadsheet header must not break the
    rules, the diagram or generated code comments)."""
    return re.sub(r"\s+", " ", str(name)).strip()


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


def _read_parquet(data: bytes, filename: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # the limits, checked on the footer before any column is decoded
        schema = pq.ParquetFile(io.BytesIO(data)).schema_arrow
        metadata = pq.ParquetFile(io.BytesIO(data)).metadata
        names = [_column_name(name) for name in upload_bounds.table_columns(schema)]
        _check_size(metadata.num_rows, len(names), filename)
        _check_unique(names, filename)
        upload_bounds.check_parquet_types(schema, filename)
        decoded = upload_bounds.parquet_decoded_mb(metadata)
        if decoded > DECODED_MB:
            raise DataError(f"'{filename}' holds {decoded:,.0f} MB of data once decompressed; the limit is "
                            f"{DECODED_MB} MB: drop text columns the model does not need, or sample rows.")
        text = [field.name for field in schema if _is_text(field.type)]
        table = _read_columns(pq.ParquetFile(io.BytesIO(data), read_dictionary=text), schema, filename)
        table.validate(full=True)  # e.g. text cells that are not UTF-8, which pandas would trip on later
    except MemoryError:
        raise
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise DataError(f"'{filename}' is not a readable Parquet file ({exc}).") from None
    try:
        df = table.to_pandas()
    except (UnicodeDecodeError, TypeError, ValueError, KeyError):  # pandas' own metadata in the file is damaged
        raise DataError(f"'{filename}' is not a readable Parquet file (its pandas metadata is damaged): save it "
                        "again and upload that.") from None
    if any(name is not None for name in df.index.names):  # a named pandas index (e.g. 'house_id') is data
        df = df.reset_index()
    df.columns = [_column_name(c) for c in df.columns]
    _check_unique(list(df.columns), filename)
    for column in df.columns:  # binary cells: text if they are UTF-8, else refused by name
        if df[column].dtype == object and df[column].map(lambda v: isinstance(v, bytes)).any():
            df[column] = _bytes_as_text(df[column], column, filename)
    return df.reset_index(drop=True)


def _is_text(kind) -> bool:
    import pyarrow as pa

    return pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind) or \
        pa.types.is_large_binary(kind)


def _read_columns(file, schema, filename: str):
    """The file's columns one by one, refused once their decoded size passes ``DECODED_MB``: the footer's sizes
    are the writer's word, this is what the pages will hold. Text is read as a dictionary (``read_dictionary``:
    a dictionary page is not expanded), measured, and only then expanded to the column ``schema`` declares."""
    import pyarrow as pa

    columns, used = {}, 0
    for field in schema:
        column = file.read(columns=[field.name], use_pandas_metadata=False).column(0)
        used += _expanded_bytes(column)
        if used > DECODED_MB << 20:
            raise DataError(f"'{filename}' holds more than {DECODED_MB} MB of data once decompressed (column "
                            f"'{field.name}'): drop text columns the model does not need, or sample rows.",
                            column=str(field.name))
        columns[field.name] = column
    return pa.table({name: column.cast(schema.field(name).type) for name, column in columns.items()}
                    ).replace_schema_metadata(schema.metadata)


def _expanded_bytes(column) -> int:
    """Bytes of ``column`` once its dictionaries are expanded: each value's length as many times as it is used."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(column.type):
        return column.nbytes
    return sum(int(pc.sum(pc.take(pc.binary_length(chunk.dictionary), chunk.indices)).as_py() or 0)
               + 8 * len(chunk) for chunk in column.chunks)


def _bytes_as_text(series: pd.Series, column: str, filename: str) -> pd.Series:
    try:
        return series.map(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v)
    except UnicodeDecodeError:
        raise DataError(f"Column '{column}' of '{filename}' holds binary data, not text: drop it before "
                        "uploading.", column=column) from None


def _read_excel(data: bytes, filename: str) -> pd.DataFrame:
    try:
        uncached = _check_workbook(data, filename)
        # cells as openpyxl gives them: a header 2019 over decimals must not become the float 2019.0
        raw = pd.read_excel(io.BytesIO(data), sheet_name=0, header=None, engine="openpyxl", nrows=MAX_ROWS + 2,
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
    header = [_column_name(v) if pd.notna(v) else f"Unnamed: {j}" for j, v in enumerate(raw.iloc[0])]
    _check_unique(header, filename)
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
    (sizes, expansion), then each part streamed (text length, cells per row). True if a formula has no value."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        upload_bounds.check_zip(archive, filename, max_mb=(MAX_CELLS + 2 * MAX_COLUMNS) * XML_CELL_BYTES >> 20,
                                max_strings_mb=SHARED_STRINGS_MB, max_ratio=MAX_ZIP_RATIO, ratio_floor_mb=16)
        declared = _declared_rows(archive)
        if declared is not None:  # at most a title and a header above the data
            _check_size(max(0, declared - 2), 1, filename)
        return any([upload_bounds.scan_xml(upload_bounds.member_chunks(archive, info, filename), filename,
                                           info.filename)
                    for info in archive.infolist() if info.filename.lower().endswith((".xml", ".rels"))])


DIMENSION = re.compile(rb"<(?:\w+:)?dimension\s+ref=\"[A-Z]{1,3}(\d{1,9})(?::[A-Z]{1,3}(\d{1,9}))?\"")
SHEET_ID = re.compile(rb"<(?:\w+:)?sheet\b[^>]*?\s(?:\w+:)?id=\"([^\"]+)\"")


def _declared_rows(archive: zipfile.ZipFile) -> int | None:
    """The rows the first sheet declares in its ``<dimension ref="A1:S2500000"/>`` (which comes before its data), read
    from the sheet's first 64 KB: a 2.5-million-row sheet is refused in a moment instead of after two minutes of
    streaming and parsing. None when the sheet or its dimension is not found (it is optional); the limits are then
    checked after parsing, as before."""
    sheet = _first_sheet(archive)
    if sheet is None:
        return None
    with archive.open(sheet) as member:
        found = DIMENSION.search(member.read(1 << 16))
    if found is None:
        return None
    first, last = int(found.group(1)), int(found.group(2) or found.group(1))
    return abs(last - first) + 1


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
        for row in book.worksheets[0].iter_rows(max_row=MAX_ROWS + 2, values_only=True):
            found.update(i for i, value in enumerate(row) if isinstance(value, str) and value.startswith("="))
    finally:
        book.close()
    return sorted(found)


def _check_unique(names: Sequence[str], filename: str) -> None:
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise DataError(f"Column name '{name}' appears twice in '{filename}' (columns {seen[name]} and "
                            f"{position}): rename one of them.", column=name)
        seen[name] = position


def _check_size(n_rows: int, n_columns: int, filename: str) -> None:
    if n_columns > MAX_COLUMNS:
        raise DataError(f"'{filename}' has {n_columns:,} columns; the limit is {MAX_COLUMNS}: "
                        "keep the target and the features you need.")
    if n_rows > MAX_ROWS:
        raise DataError(f"'{filename}' has more than {MAX_ROWS:,} rows: sample it down to at most "
                        f"{MAX_ROWS:,} rows first.")
    if n_rows * n_columns > MAX_CELLS:
        raise DataError(f"'{filename}' has {n_rows:,} rows x {n_columns:,} columns; the limit is {MAX_CELLS:,} cells "
                        f"(e.g. {MAX_ROWS:,} x {MAX_CELLS // MAX_ROWS} or {MAX_CELLS // MAX_COLUMNS:,} x "
                        f"{MAX_COLUMNS}): keep the features you need, or sample rows.")


def _check_shape(df: pd.DataFrame, filename: str, training: bool, text: bool = False) -> pd.DataFrame:
    """Size limits, then (to train on) at least MIN_ROWS rows; a text file none of whose columns holds numbers is
    prose or a list rather than a table, and is told so instead of being counted short."""
    _check_size(len(df), df.shape[1], filename)
    if len(df) == 0:
        raise DataError(f"'{filename}' has a header but no data rows: add rows below the header.")
    if training and text and not any(column_kind(df[c]) is ColumnKind.NUMERIC for c in df.columns):
        raise DataError(f"'{filename}' does not look like a table: none of its {df.shape[1]} columns holds numbers, "
                        "and GET predicts a number from numbers. Upload a table (CSV, Parquet or Excel) whose first "
                        "line names the columns and whose rows hold the values, or check the delimiter.")
    if len(df) < MIN_ROWS and training:
        raise DataError(f"'{filename}' has only {len(df)} data row{'s' if len(df) > 1 else ''}; "
                        f"GET needs at least {MIN_ROWS}: use a larger table.")
    return df
