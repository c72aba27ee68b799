"""Hostile uploads (issue 18) are refused before they expand, quickly and with the real reason; the largest
legitimate ones still load; ``read_table_bounded`` turns a limit reached in its child into a sentence."""

from __future__ import annotations

import io
import os
import re
import struct
import time
import zipfile

import numpy as np
import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from get_core.data import confined, reading
from get_core.data.columns import DataError
from tests import hostile_files as hostile


@pytest.fixture
def no_openpyxl(monkeypatch):
    """Fails the test if openpyxl opens the workbook: the refusal must come before it expands anything."""
    import openpyxl

    monkeypatch.setattr(openpyxl, "load_workbook", lambda *a, **k: pytest.fail("openpyxl opened the workbook"))
    monkeypatch.setattr(openpyxl.reader.excel, "load_workbook", openpyxl.load_workbook)


def refused(content: bytes, filename: str, match: str, within_s: float = 1.0) -> DataError:
    """Refused with ``match`` within ``within_s`` CPU seconds of this process (the same on a busy machine)."""
    start = time.process_time()
    with pytest.raises(DataError, match=match) as error:
        reading.read_table(content, filename)
    assert time.process_time() - start < within_s
    return error.value


def parquet(table: pa.Table) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------ Excel
def test_a_huge_shared_string_is_refused_before_openpyxl_expands_it(no_openpyxl):
    content = hostile.huge_shared_string_xlsx(200_000_000)  # 190 MB of text in a 200 KB file
    assert len(content) < 300_000
    refused(content, "shared.xlsx", "191 MB of text cells; the limit is 128 MB")


def test_a_shared_string_longer_than_a_cell_can_hold_is_refused_even_within_the_size_limits(no_openpyxl):
    refused(hostile.huge_shared_string_xlsx(2_000_000), "shared.xlsx", "text longer than 32,767 characters")


def test_a_huge_inline_cell_is_refused_as_a_zip_bomb_before_openpyxl_expands_it(no_openpyxl):
    refused(hostile.huge_inline_cell_xlsx(200_000_000), "inline.xlsx",
            "zip bomb.*sheet1.xml' expands 1,0[0-9]{2} times")


def test_an_inline_cell_longer_than_a_cell_can_hold_is_refused(no_openpyxl):
    refused(hostile.huge_inline_cell_xlsx(1_000_000), "inline.xlsx", "in 'xl/worksheets/sheet1.xml'")


def test_a_header_of_three_million_cells_is_refused_fast_as_too_many_columns(no_openpyxl):
    content = hostile.wide_header_xlsx(3_000_000)
    assert len(content) > 7_000_000
    refused(content, "wide.xlsx", "row of more than 16,384 cells.*200 columns")


def test_a_zip_part_that_lies_about_its_size_is_read_no_further_than_it_declares(no_openpyxl):
    content = bytearray(hostile.huge_shared_string_xlsx(30_000))  # shared strings: 30 KB, stored as 300 bytes
    with zipfile.ZipFile(io.BytesIO(bytes(content))) as archive:
        info = archive.getinfo("xl/sharedStrings.xml")
    central = content.rindex(b"PK\x01\x02", 0, content.rindex(b"xl/sharedStrings.xml"))
    for offset in (info.header_offset + 22, central + 24):  # local header and central directory: declare 100 bytes
        content[offset:offset + 4] = struct.pack("<I", 100)
    refused(bytes(content), "lying.xlsx", "not a readable Excel workbook|holds more than it declares")


def test_a_formula_column_whose_header_is_an_uncached_formula_too_is_named():
    sheet = hostile._rows(['<c t="inlineStr"><is><t>x</t></is></c><c><f>"y"&amp;"z"</f></c>',
                           *(f"<c><v>{i}</v></c><c><f>A{i + 2}*2</f></c>" for i in range(25))])
    df = reading.read_table(hostile.workbook(sheet), "generated.xlsx")
    assert list(df.columns) == ["x"] and df.attrs["uncached_formulas"] == ["column B"]


def _thirty_rows() -> bytes:
    buffer = io.BytesIO()
    pd.DataFrame({"x": range(30), "y": range(30)}).to_excel(buffer, index=False)
    return buffer.getvalue()


_THIRTY_ROWS = _thirty_rows()


def _with_dimension(content: bytes, ref: str) -> bytes:
    """``content`` (an .xlsx) with its sheet's declared ``<dimension ref=...>`` replaced: the sheet's data unchanged."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(content)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(rb'<dimension ref="[^"]*"', f'<dimension ref="{ref}"'.encode(), data)
            target.writestr(info, data)
    return out.getvalue()


def test_a_sheet_of_more_rows_than_the_limit_is_refused_as_the_stream_passes_them(no_openpyxl, monkeypatch):
    """Without a ``<dimension>`` tag a 2.5-million-row workbook took 44-57 s to refuse (openpyxl parsed a million
    rows first): the stream counts the rows and stops at the limit (here 2,000, so the test stays small)."""
    monkeypatch.setattr(reading.limits, "MAX_ROWS", 2_000)
    content = hostile.numeric_xlsx(60_000, 3)  # a 4.5 MB sheet, streamed in 1 MB pieces
    assert b"<dimension" not in content
    seen = []
    chunks = reading.excel.upload_bounds.member_chunks

    def counted(archive, info, filename):
        for chunk in chunks(archive, info, filename):
            seen.append(len(chunk) if info.filename.endswith("sheet1.xml") else 0)
            yield chunk

    monkeypatch.setattr(reading.excel.upload_bounds, "member_chunks", counted)
    refused(content, "huge.xlsx", "more than 2,000 rows: sample it down")
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        assert sum(seen) <= 1 << 20 < archive.getinfo("xl/worksheets/sheet1.xml").file_size  # the first piece


@settings(max_examples=40, deadline=None, derandomize=True)
@given(first=st.integers(1, 1_048_576), last=st.integers(1, 1_048_576), columns=st.sampled_from(["A", "S", "XFD"]),
       single=st.booleans())
def test_a_sheets_declared_dimension_is_not_trusted(first, last, columns, single):
    """A 30-row workbook reads its 30 rows whatever its optional ``<dimension ref>`` says: A1:XFD1048576 was
    refused as "more than 1,000,000 rows"."""
    ref = f"A{first}" if single else f"A{first}:{columns}{last}"
    df = reading.read_table(_with_dimension(_THIRTY_ROWS, ref), "fine.xlsx")
    assert df.shape == (30, 2)


@pytest.mark.slow
def test_a_legitimate_workbook_of_100000_rows_and_200_columns_passes_every_bound_before_parsing():
    """The bounds are what could refuse a table at the cell limit; openpyxl parsing its 20 million cells takes
    minutes and is the same code the smaller workbook below goes through."""
    content = hostile.numeric_xlsx(100_000, 200)
    assert len(content) < reading.MAX_UPLOAD_MB << 20
    assert reading.limits.MAX_CELLS >= 100_000 * 200
    assert reading.excel._check_workbook(content, "numbers.xlsx") is False  # no formula without its value


def test_a_legitimate_workbook_of_200_columns_loads_every_cell():
    content = hostile.numeric_xlsx(2_000, 200)
    df = reading.read_table(content, "numbers.xlsx")
    assert df.shape == (2_000, 200) and df.iloc[-1].notna().all()
    assert df.dtypes.map(lambda kind: kind.kind == "f").all()


def test_a_csv_of_more_than_100000_rows_is_read_within_the_bounded_readers_limits():
    content = hostile.numeric_csv(150_000, 6)
    df = reading.read_table_bounded(content, "tall.csv")
    assert df.shape == (150_000, 6) and df.iloc[-1].notna().all()


def test_a_parquet_file_of_more_than_a_million_rows_is_refused_from_its_footer():
    content = hostile.numeric_parquet(reading.limits.MAX_ROWS + 1, 1)
    refused(content, "tall.parquet", "more than 1,000,000 rows")


# ------------------------------------------------------------------------------------------ Parquet
def test_plain_encoded_text_that_decodes_to_gigabytes_is_refused_from_the_footer(monkeypatch):
    content = hostile.plain_text_parquet(20_000, 3, 100_000)  # the file: 5.7 GB of text in under 1 MB
    monkeypatch.setattr(pq.ParquetFile, "read", lambda *a, **k: pytest.fail("decoded a column"))
    refused(content, "plain.parquet", "holds 5,722 MB of data once decompressed; the limit is 512 MB")


def test_dictionary_encoded_text_that_expands_to_gigabytes_is_refused_before_it_is_expanded():
    content = hostile.plain_text_parquet(20_000, 3, 100_000, use_dictionary=True)  # 6 GB from 300 KB of pages
    refused(content, "dict.parquet", "more than 512 MB of data once decompressed \\(column 't0'\\)", within_s=3)


def test_dictionary_encoded_text_within_the_budget_reads_as_plain_text():
    df = reading.read_table(hostile.plain_text_parquet(300, 2, 1_000, use_dictionary=True), "dict.parquet")
    assert df.shape == (300, 2) and df["t0"].iloc[-1] == "x" * 1_000
    assert df["t0"].dtype == reading.read_table(hostile.plain_text_parquet(300, 2, 1_000), "p.parquet")["t0"].dtype


@pytest.mark.parametrize("values, kind", [
    (pa.array([[1, 2]] * 25), "lists"),
    (pa.array([{"a": 1, "b": "x"}] * 25), "records"),
    (pa.array([[("k", 1)]] * 25, type=pa.map_(pa.string(), pa.int64())), "maps"),
])
def test_nested_parquet_columns_are_refused_by_name_with_what_to_do(values, kind):
    error = refused(parquet(pa.table({"x": range(25), "tags": values, "y": range(25)})), "nested.parquet",
                    f"Column 'tags' of 'nested.parquet' holds {kind}.*drop it, or spread it")
    assert error.column == "tags"


def test_a_parquet_file_of_250_columns_is_reported_as_250_columns():
    frame = pd.DataFrame(np.zeros((25, 250)), columns=[f"c{j}" for j in range(250)])
    refused(frame.to_parquet(), "wide.parquet", "has 250 columns; the limit is 200")
    frame.index = pd.RangeIndex(25, 50)  # stored as a column (__index_level_0__), not counted
    refused(frame.iloc[:, :201].to_parquet(index=True), "wide.parquet", "has 201 columns")


def test_complex_numbers_cannot_reach_parquet():
    """pyarrow has no complex type: a complex column cannot be written, so none can lose its imaginary part."""
    with pytest.raises(pa.ArrowNotImplementedError):
        pa.array(np.array([1 + 2j]))


# ------------------------------------------------------------------------------------------ text
def test_a_csv_header_of_a_million_names_is_refused_fast_as_too_many_columns():
    content = hostile.wide_csv(1_000_000)
    assert len(content) > 11_000_000
    refused(content, "wide.csv", "'wide.csv' has 1,000,000 columns; the limit is 200")


def test_a_lone_carriage_return_in_a_name_is_a_space_and_classic_mac_line_ends_are_lines():
    rows = "".join(f"{i},{i % 3},{2 * i}\n" for i in range(25))
    assert list(reading.read_table(("wind\rspeed,temp,y\n" + rows).encode(), "cr.csv").columns) == [
        "wind speed", "temp", "y"]
    df = reading.read_table(("a,b,y\r" + rows.replace("\n", "\r")).encode(), "mac.csv")
    assert list(df.columns) == ["a", "b", "y"] and len(df) == 25


# ------------------------------------------------------------------------------------------ the child process
def test_the_bounded_reader_gives_what_read_table_gives_attrs_included():
    content = ("a;b;y\n" + "".join(f"{i},5;{i % 3};{i}\n" for i in range(30))).encode()
    bounded, direct = reading.read_table_bounded(content, "eu.csv"), reading.read_table(content, "eu.csv")
    pd.testing.assert_frame_equal(bounded, direct)
    assert bounded.attrs == direct.attrs and bounded.attrs["decimal_comma"] == ["a"]


def test_the_bounded_reader_passes_a_refusal_on_with_its_column():
    with pytest.raises(DataError, match="'a' appears twice") as error:
        reading.read_table_bounded(b"a,a\n" + b"1,2\n" * 30, "dup.csv")
    assert error.value.column == "a"


@pytest.mark.parametrize("limit, value, message", [
    ("READ_MEMORY_MB", 40, "'big.csv' needs more than 40 MB of memory to read"),
    ("READ_SECONDS", 0.2, "Reading 'big.csv' took more than 0.2 seconds"),
    ("RESULT_MB", 1, "'big.csv' takes 4 MB of memory once read; the limit is 1 MB"),
])
def test_a_limit_the_checks_do_not_foresee_is_reached_in_the_child_and_said(monkeypatch, limit, value, message):
    content = hostile.numeric_csv(10_000 if limit == "RESULT_MB" else 100_000, 50)
    reading.read_table_bounded(b"a,b\n" + b"1,2\n" * 30, "warm.csv")  # the forkserver is up: time is the read's
    monkeypatch.setattr(reading, limit, value)
    with pytest.raises(DataError, match=message):
        reading.read_table_bounded(content, "big.csv")


def test_a_parquet_file_whose_pandas_metadata_is_damaged_is_refused_in_words():
    table = pa.table({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    metadata = {b"pandas": b'{"index_columns": [], "columns": [{"name": "a", "numpy_type": "floTt64"}]}'}
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(metadata), buffer)
    with pytest.raises(DataError, match="'t.parquet' is not a readable Parquet file \\(its pandas metadata is damaged\\)"):
        reading.read_table(buffer.getvalue(), "t.parquet", training=False)


def test_a_reader_that_aborts_the_process_is_reported_as_a_damaged_file():
    with pytest.raises(confined.ConfinedError) as caught:
        confined.run_confined(os.abort, memory_mb=256, seconds=30, result_mb=1)
    assert caught.value.limit == "crash"
    assert "the file is damaged" in reading._limit_message("t.parquet", caught.value)


def test_parquet_text_cells_that_are_not_utf8_are_refused_in_words():
    table = pa.table({"a": pa.array([b"ok", b"\xc2"], pa.binary()).cast(pa.string(), safe=False), "b": [1.0, 2.0]})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    with pytest.raises(DataError, match="'t.parquet' is not a readable Parquet file"):
        reading.read_table(buffer.getvalue(), "t.parquet", training=False)


def test_an_unexpected_failure_in_the_reading_child_reaches_the_page_as_a_sentence():
    """A TypeError no check foresees (the data are not bytes) stands for any reader bug: a sentence, not a trace."""
    with pytest.raises(DataError, match="'t.csv' could not be read \\(TypeError: .*save it again as CSV"):
        reading.read_table_bounded(12345, "t.csv")


def test_a_workbook_column_of_false_zero_and_blank_cells_is_read_not_crashed():
    """Found by Hypothesis: pandas' factorize takes 0 for False, so the column looked boolean and failed to convert."""
    book = openpyxl.Workbook()
    for row in [["a", "b", "c"], [1.0, False, 2.0], [2.0, 0, 3.0], [3.0, " ", 4.0]]:
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    df = reading.read_table(buffer.getvalue(), "t.xlsx", training=False)
    assert df["b"].isna().tolist() == [False, False, True]
