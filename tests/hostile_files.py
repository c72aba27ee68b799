"""Uploads built to hurt the reader (issue 18), and the largest legitimate ones, generated in memory at any size.

Workbooks are written part by part as raw XML, streamed into the zip in 1 MB chunks, so a member that expands to
gigabytes is built without ever holding it: the tests build small ones, ``bench.studies.hostile_uploads`` the issue's sizes.
"""

from __future__ import annotations

import io
import zipfile
from typing import Iterable, Iterator

import numpy as np

CHUNK = 1 << 20
_MAIN = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_RELS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_TYPES = "application/vnd.openxmlformats-officedocument.spreadsheetml"
_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
        f'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/'
        f'workbook.xml" ContentType="{_TYPES}.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" '
        f'ContentType="{_TYPES}.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" '
        f'ContentType="{_TYPES}.sharedStrings+xml"/></Types>'),
    "_rels/.rels": (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PACKAGE_RELS}">'
        f'<Relationship Id="rId1" Type="{_RELS}/officeDocument" Target="xl/workbook.xml"/></Relationships>'),
    "xl/workbook.xml": (
        f'<?xml version="1.0" encoding="UTF-8"?><workbook {_MAIN} xmlns:r="{_RELS}"><sheets><sheet name="Sheet1" '
        'sheetId="1" r:id="rId1"/></sheets></workbook>'),
    "xl/_rels/workbook.xml.rels": (
        f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_PACKAGE_RELS}">'
        f'<Relationship Id="rId1" Type="{_RELS}/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{_RELS}/sharedStrings" '
        'Target="sharedStrings.xml"/></Relationships>'),
}


def repeated(text: bytes, size: int) -> Iterator[bytes]:
    """``size`` bytes of ``text`` repeated, in chunks of about 1 MB."""
    block = text * max(1, CHUNK // len(text))
    for _ in range(size // len(block)):
        yield block
    yield text * ((size % len(block)) // len(text))


def workbook(sheet: Iterable[bytes], shared: Iterable[bytes] = (b"<si><t>y</t></si>",)) -> bytes:
    """An .xlsx of one sheet: ``sheet`` is the body of ``<sheetData>``, ``shared`` of ``<sst>``, both streamed."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in _PARTS.items():
            archive.writestr(name, text)
        for name, head, body, tail in [
                ("xl/sharedStrings.xml", f"<sst {_MAIN}>", shared, "</sst>"),
                ("xl/worksheets/sheet1.xml", f"<worksheet {_MAIN}><sheetData>", sheet, "</sheetData></worksheet>")]:
            with archive.open(name, "w", force_zip64=True) as member:
                member.write(b'<?xml version="1.0" encoding="UTF-8"?>' + head.encode())
                for chunk in body:
                    member.write(chunk)
                member.write(tail.encode())
    return buffer.getvalue()


def _rows(rows: Iterable[str], first: int = 1) -> Iterator[bytes]:
    """Sheet rows numbered from ``first``, joined into chunks of about 1 MB."""
    chunk, size = [], 0
    for number, cells in enumerate(rows, start=first):
        chunk.append(f'<row r="{number}">{cells}</row>')
        size += len(chunk[-1])
        if size > CHUNK:
            yield "".join(chunk).encode()
            chunk, size = [], 0
    yield "".join(chunk).encode()


def _header(names: Iterable[str]) -> str:
    return "".join(f'<c t="inlineStr"><is><t>{name}</t></is></c>' for name in names)


def _numbers(rows: int, first: int) -> Iterator[bytes]:
    """``rows`` sheet rows of two numbers, numbered from ``first``."""
    return _rows((f"<c><v>{i}</v></c><c><v>{2 * i}</v></c>" for i in range(rows)), first)


def _small_table(first: str, rows: int = 25) -> Iterator[bytes]:
    """A header (x, y) and ``rows`` numeric rows; ``first`` is put in the first data row's cell A2."""
    yield from _rows([_header(["x", "y"]), first + "<c><v>0</v></c>"])
    yield from _numbers(rows - 1, first=3)


def huge_shared_string_xlsx(chars: int) -> bytes:
    """Finding 1: cell A2 refers to a shared string of ``chars`` letters (1.2e9 zip to about 1.2 MB)."""
    return workbook(_small_table('<c t="s"><v>0</v></c>'),
                    [b"<si><t>", *repeated(b"a", chars), b"</t></si>"])


def huge_inline_cell_xlsx(chars: int) -> bytes:
    """Finding 2: cell A2 holds an inline string of ``chars`` letters."""
    head = f'<row r="1">{_header(["x", "y"])}</row><row r="2"><c t="inlineStr"><is><t>'
    return workbook([head.encode(), *repeated(b"a", chars), b"</t></is></c></row>", *_numbers(24, first=3)])


def wide_header_xlsx(cells: int) -> bytes:
    """Finding 5: a header row of ``cells`` numbered cells (3,000,000 zip to about 7.5 MB) over two data rows."""
    def header() -> Iterator[bytes]:
        yield b'<row r="1">'
        for start in range(0, cells, 50_000):
            yield "".join(f"<c><v>{i}</v></c>" for i in range(start, min(cells, start + 50_000))).encode()
        yield b'</row><row r="2"><c><v>1</v></c></row><row r="3"><c><v>2</v></c></row>'
    return workbook(header())


def numeric_xlsx(rows: int, columns: int, seed: int = 0) -> bytes:
    """A legitimate table at the limits: a header and ``rows`` x ``columns`` numbers of 3 significant digits
    (100,000 x 200 zip to 45 MB, under the upload limit)."""
    values = _numeric_frame(rows, columns, seed).to_numpy()
    return workbook(_rows([_header(f"c{j}" for j in range(columns)),
                           *("".join(f"<c><v>{v:g}</v></c>" for v in row) for row in values)]))


def wide_csv(columns: int) -> bytes:
    """Finding 4: a header of ``columns`` names (1,000,000 make 11 MB) over two rows of as many numbers."""
    return (",".join(f"c{j}" for j in range(columns)) + "\n" + ("1," * (columns - 1) + "1\n") * 2).encode()


def plain_text_parquet(rows: int, columns: int, value_bytes: int, use_dictionary: bool = False) -> bytes:
    """Finding 3: ``columns`` text columns repeating one ``value_bytes`` value (20,000 x 3 x 100 KB zip to 58 KB),
    plain-encoded without a dictionary unless ``use_dictionary``; written 100 rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    batch = pa.table({f"t{j}": pa.array(["x" * value_bytes] * min(rows, 100)) for j in range(columns)})
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, batch.schema, use_dictionary=use_dictionary, compression="zstd") as writer:
        for start in range(0, rows, 100):
            writer.write_table(batch.slice(0, min(100, rows - start)), row_group_size=rows)
    return buffer.getvalue()


def _numeric_frame(rows: int, columns: int, seed: int = 0):
    import pandas as pd

    values = np.random.default_rng(seed).normal(size=(rows, columns)).round(2)
    return pd.DataFrame(values, columns=[f"c{j}" for j in range(columns)])


def numeric_csv(rows: int, columns: int, seed: int = 0) -> bytes:
    """The CSV twin of ``numeric_xlsx``, written by Arrow (pandas took 8 s of a busy machine for 100,000 x 75)."""
    import pyarrow as pa
    import pyarrow.csv

    buffer = io.BytesIO()
    pyarrow.csv.write_csv(pa.Table.from_pandas(_numeric_frame(rows, columns, seed), preserve_index=False), buffer)
    return buffer.getvalue()


def numeric_parquet(rows: int, columns: int, seed: int = 0) -> bytes:
    """The Parquet twin of ``numeric_xlsx``."""
    buffer = io.BytesIO()
    _numeric_frame(rows, columns, seed).to_parquet(buffer)
    return buffer.getvalue()
