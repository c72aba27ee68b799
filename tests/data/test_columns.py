"""Reading, typing, encoding and validating user tables: every refusal names the column or row."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from get_core.data import columns, encoding, reading
from get_core.data.columns import ColumnKind, DataError
from get_core.data.encoding import DataSpec, Encoding, prepare


def csv_bytes(df: pd.DataFrame, sep: str = ",") -> bytes:
    return df.to_csv(index=False, sep=sep).encode()


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 40
    return pd.DataFrame({
        "temp": rng.normal(20, 5, n).round(3),
        "colour": rng.choice(["red", "green", "blue"], n),
        "count": rng.integers(0, 5, n),
        "y": rng.normal(size=n).round(4),
    })


def spec(table: pd.DataFrame, target: str = "y", **kwargs) -> DataSpec:
    return DataSpec(target=target, features=tuple(c for c in table.columns if c != target), **kwargs)


# ------------------------------------------------------------------------------------------ reading files
@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_the_delimiter_is_detected(table, sep):
    df = reading.read_table(csv_bytes(table, sep), "t.csv")
    assert list(df.columns) == list(table.columns) and len(df) == len(table)


def test_decimal_commas_are_read_as_numbers_where_fields_are_not_comma_separated():
    text = "temp;pressure;site;y\n" + "\n".join(f"{20 + i / 4:.2f};{1000 + i:.1f};{'ab'[i % 2]};{i / 8:.3f}".replace(
        ".", ",") for i in range(25)) + "\n;1.234,5;a;-2,5e3\n"
    df = reading.read_table(text.encode(), "european.csv")
    assert df.attrs["decimal_comma"] == ["temp", "pressure", "y"]
    assert df["temp"].iloc[1] == 20.25 and np.isnan(df["temp"].iloc[25])
    assert df["pressure"].iloc[25] == 1234.5 and df["y"].iloc[25] == -2500.0  # a thousands dot, an exponent
    assert columns.column_kind(df["site"]) is ColumnKind.CATEGORICAL
    assert columns.column_kind(df["y"]) is ColumnKind.NUMERIC


def test_a_bad_line_below_skipped_lines_is_named_by_its_data_row():
    rows = "".join(f"{i};{2 * i};{i % 3}\r\n" for i in range(25)).replace("4;8;1\r\n", "4;8;1;9\r\n")
    with pytest.raises(DataError, match="Row 5 \\(line 8 of 'export.csv'\\) has 4 fields") as error:
        reading.read_table((";;\r\n;;\r\nwind;temp;y\r\n" + rows).encode(), "export.csv")  # ";" still detected
    assert error.value.row == 5


def test_a_delimiter_ending_every_data_line_shifts_no_column():
    rows = "".join(f"{50 + i},{1 + i % 4},{1000 + 10 * i},\n" for i in range(25))
    df = reading.read_table(("size,rooms,price\n" + rows).encode(), "listing.csv")
    assert list(df.columns) == ["size", "rooms", "price"]
    assert df.iloc[0].tolist() == [50, 1, 1000] and df.index.equals(pd.RangeIndex(25))
    labelled = "".join(f'"r{i}",{i},{2 * i}\n' for i in range(25))  # R's write.table: the first field labels rows
    df = reading.read_table(('"x","y"\n' + labelled).encode(), "r.csv")
    assert list(df.columns) == ["x", "y"] and df.iloc[3].tolist() == [3, 6]


@pytest.mark.parametrize("sep", [",", ";", "|", "\t"])
def test_a_trailing_delimiter_is_found_whatever_the_delimiter_and_the_first_column(sep):
    rows = "".join(f"{i}{sep}{i + 1}{sep}{i + 2}{sep}\n" for i in range(25))  # first column 0, 1, 2, ...
    df = reading.read_table((sep.join(["id", "a", "b"]) + "\n" + rows).encode(), "t.txt")
    assert list(df.columns) == ["id", "a", "b"] and df.iloc[4].tolist() == [4, 5, 6]


@pytest.mark.parametrize("at, long_row", [(5, "7,8,9,10"), (5, "7,8,9,10,11"), (0, "7,8,9,10,11")])
def test_a_long_line_among_lines_with_a_trailing_delimiter_is_refused_not_cut_short(at, long_row):
    rows = [f"{i},{i + 1},{i + 2}," for i in range(24)]  # a spreadsheet's export: every line ends with a delimiter
    rows.insert(at, long_row)  # pandas kept 7, 8, 9 and dropped the rest (or shifted every row), with only a warning
    fields = long_row.count(",") + 1
    where = f"Row {at + 1} \\(line {at + 2} of 't.csv'\\) has {fields} fields"
    with pytest.raises(DataError, match=where):
        reading.read_table(("a,b,c\n" + "\n".join(rows)).encode(), "t.csv", training=False)


def test_one_long_first_line_is_refused_rather_than_taken_as_row_labels():
    lines = ["city,area,rooms,price", "Paris, FR,115,3,375"] + [f"Paris,{a},{a % 4},{3 * a}" for a in range(40)]
    with pytest.raises(DataError, match="Row 1 \\(line 2 of 'homes.csv'\\) has 5 fields but the header has 4"):
        reading.read_table("\n".join(lines).encode(), "homes.csv")


def test_an_r_table_with_row_labels_and_an_all_na_last_column_reads_as_before():
    rows = "".join(f'"r{i}",{i},{2 * i},NA\n' for i in range(25))
    df = reading.read_table(('"a","b","c"\n' + rows).encode(), "r.csv")
    assert df["a"].iloc[3] == 3 and df["b"].iloc[3] == 6 and df["c"].isna().all()


def test_empty_columns_and_rows_at_the_end_of_a_spreadsheet_export_are_dropped():
    rows = "".join(f"{i};{2 * i};;\r\n" for i in range(25)) + ";;;\r\n;;;\r\n"
    df = reading.read_table(("a;b;;\r\n" + rows).encode(), "export.csv")
    assert list(df.columns) == ["a", "b"] and len(df) == 25


def test_thousands_dots_beside_decimal_commas_are_thousands():
    prices = ["850", "1.250", "2.100", "12.000.000"]
    rows = "".join(f"{40 + i},5;{prices[i % 4]};{i}\n" for i in range(24))
    df = reading.read_table(("area;price;y\n" + rows).encode(), "angebote.csv")
    assert df["price"].iloc[:4].tolist() == [850.0, 1250.0, 2100.0, 12e6]
    assert df["area"].iloc[0] == 40.5 and df.attrs["decimal_comma"] == ["area", "price"]
    coordinates = "".join(f"{i},5;{48 + i}.137;{i}\n" for i in range(24))  # every value dotted, one group
    assert reading.read_table(("w;lat;y\n" + coordinates).encode(), "geo.csv")["lat"].iloc[1] == 49.137
    english = "".join(f"{40 + i};{prices[i % 3]};{i}\n" for i in range(24))  # no decimal comma anywhere
    assert reading.read_table(("area;price;y\n" + english).encode(), "english.csv")["price"].iloc[1] == 1.25


def test_numbers_formatted_for_display_are_read_as_numbers():
    rows = "".join(f'{5 * (i % 6)}%,"${1000 + 250 * (i % 4):,}",€ -{i}.5,"{i},5",{i}\n' for i in range(24))
    df = reading.read_table(("rate,price,loss,code,y\n" + rows).encode(), "report.csv")
    assert df["rate"].iloc[:2].tolist() == [0.0, 5.0] and df["price"].iloc[1] == 1250.0
    assert df["loss"].iloc[3] == -3.5 and df.attrs["formatted"] == ["rate", "price", "loss"]
    assert df["code"].iloc[1] == "1,5"  # not a thousands pattern: left as written
    fractions = "".join(f"0,{125 * (1 + i % 3)}\tx{i % 2}\t{i}\n" for i in range(24))
    df = reading.read_table(("share\tgroup\ty\n" + fractions).encode(), "shares.tsv")
    assert df["share"].iloc[:3].tolist() == [0.125, 0.25, 0.375]  # a thousands group never follows a lone 0
    european = "".join(f"{5 * (i % 6)}%;${1000 + 250 * (i % 4):,};{i}\n" for i in range(24))
    df = reading.read_table(("rate;price;y\n" + european).encode(), "eu.csv")
    assert df.attrs["formatted"] == ["rate"] and df["price"].iloc[0] == "$1,000"  # there a comma may be decimal


@pytest.mark.parametrize("sep, cells", [(";", ["1,5", "\u0661\u0662"]), ("\t", ["1,5", "\u0663"]),
                                        (",", ["\uff11\uff12%", "5%"])])
def test_digits_of_other_scripts_stay_text_instead_of_failing_the_number_conversion(sep, cells):
    rows = "".join(f'"{cells[i % 2]}"{sep}{i}\n' for i in range(4))  # Arabic-Indic and fullwidth digits
    df = reading.read_table(f"a{sep}y\n{rows}".encode(), "scores.csv", training=False)
    assert df["a"].iloc[1] == cells[1] and not df.attrs.get("decimal_comma") and not df.attrs["formatted"]
    assert columns.column_kind(df["a"]) is ColumnKind.CATEGORICAL


def test_a_title_above_an_excel_header_is_skipped_and_an_empty_header_cell_named():
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Sales report 2025"])
    sheet.merge_cells("A1:C1")
    sheet.append(["x", None, "y"])
    for i in range(25):
        sheet.append([i, 2 * i, 3 * i])
    buffer = io.BytesIO()
    book.save(buffer)
    df = reading.read_table(buffer.getvalue(), "report.xlsx")
    assert list(df.columns) == ["x", "Unnamed: 1", "y"] and len(df) == 25 and df["y"].iloc[2] == 6


def test_numeric_excel_headers_read_as_the_spreadsheet_shows_them_and_as_a_csv_of_the_same_table():
    import openpyxl

    rows = [[2019, 2020, 0.5, "y"]] + [[i + 0.5, 1.5 * i, i, i] for i in range(25)]  # pandas makes 2019 a float
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    buffer = io.BytesIO()
    book.save(buffer)
    df = reading.read_table(buffer.getvalue(), "years.xlsx")
    assert list(df.columns) == ["2019", "2020", "0.5", "y"] and df["2019"].dtype == np.float64
    text = "".join(",".join(map(str, row)) + "\n" for row in rows)
    assert list(reading.read_table(text.encode(), "years.csv").columns) == list(df.columns)  # scores on Predict


def test_parquet_keeps_a_named_index_and_checks_its_size_before_decoding(monkeypatch):
    frame = pd.DataFrame({"a": range(30), "y": range(30)}, index=pd.Index(range(100, 130), name="house_id"))
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    assert list(reading.read_table(buffer.getvalue(), "homes.parquet").columns) == ["house_id", "a", "y"]
    monkeypatch.setattr(reading.limits, "MAX_ROWS", 20)
    import pyarrow.parquet

    monkeypatch.setattr(pyarrow.parquet, "read_table", lambda *a, **k: pytest.fail("decoded a file over the limit"))
    with pytest.raises(DataError, match="more than 20 rows"):
        reading.read_table(buffer.getvalue(), "homes.parquet")


def test_columns_aligned_by_spaces_are_detected_without_stealing_other_delimiters():
    aligned = "  load    speed   y\n" + "".join(f" {i:6.3f}  {2 * i:8.1f}  {i % 3}\n" for i in range(25))
    df = reading.read_table(aligned.encode(), "plant.data")  # UCI's layout: runs of spaces, leading blanks
    assert list(df.columns) == ["load", "speed", "y"] and df["speed"].iloc[3] == 6.0 and len(df) == 25
    spaced = "a, b, c\n" + "".join(f"{i}, {i}, {i}\n" for i in range(25))
    assert list(reading.read_table(spaced.encode(), "x.csv").columns) == ["a", "b", "c"]
    names = "sound level\tfreq\n" + "".join(f"{i}\t{i}\n" for i in range(25))
    assert list(reading.read_table(names.encode(), "x.tsv").columns) == ["sound level", "freq"]


def test_rows_merged_by_a_stray_quote_are_pointed_at():
    lines = ["name,price,y"] + [f"item{i},{i},{i}" for i in range(40)]
    lines[5], lines[18] = '"Big TV,5,5', 'item 17",17,17'  # the second quote closes the first, 13 lines later
    df = reading.read_table("\n".join(lines).encode(), "shop.csv")
    assert len(df) == 27 and df.attrs["multiline"] == (1, 5, "name")
    assert reading.read_table("\n".join(lines[:5] + lines[6:18] + lines[19:]).encode(), "ok.csv").attrs[
        "multiline"] is None


def test_formulas_without_computed_values_are_named():
    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(["x", "z", "y"])
    for i in range(2, 27):
        book.active.append([i, i % 3, f"=A{i}*2"])  # written by a program: no cached values
    buffer = io.BytesIO()
    book.save(buffer)
    df = reading.read_table(buffer.getvalue(), "generated.xlsx")
    assert df.attrs["uncached_formulas"] == ["y"] and df["y"].isna().all()


def test_a_ragged_line_of_a_space_aligned_file_is_numbered_without_blank_lines():
    lines = ["a b c"] + ["1 2 3"] * 24 + ["", "4 5 6 7"]
    with pytest.raises(DataError, match="Row 25 \\(line 27 of 'x.txt'\\) has 4 fields"):
        reading.read_table("\n".join(lines).encode(), "x.txt", delimiter=" ")


def test_windows_and_utf16_text_is_decoded():
    rows = "".join(f"{i};{i % 3}\r\n" for i in range(25))
    df = reading.read_table(("Preis €;“y”\r\n" + rows).encode("cp1252"), "excel.csv")
    assert list(df.columns) == ["Preis €", "“y”"]
    df = reading.read_table(("a\tb\r\n" + rows.replace(";", "\t")).encode("utf-16"), "unicode.txt")
    assert list(df.columns) == ["a", "b"] and len(df) == 25


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-le", "utf-32-be"])
def test_utf32_text_with_a_byte_order_mark_is_decoded(codec):
    rows = "".join(f"{i},{i % 3}\n" for i in range(25))
    data = ("\ufeff" if codec != "utf-32" else "") + "a,b\n" + rows
    df = reading.read_table(data.encode(codec), "unicode.csv")
    assert list(df.columns) == ["a", "b"] and df["b"].tolist() == [i % 3 for i in range(25)]


def test_damaged_utf32_is_named_as_such():
    with pytest.raises(DataError, match="starts like UTF-32 text"):
        reading.read_table("a,b\n1,2\n".encode("utf-32") + b"\xff\xff\xff", "unicode.csv")


@pytest.mark.parametrize("tail", ["", "\n", "\r\n"])
def test_lone_cr_line_ends_are_read_even_with_a_stray_newline(tail):
    rows = "".join(f"{i},{2 * i},{i % 3}\r" for i in range(25))
    df = reading.read_table(('a,b,"c\nd"\r' + rows + tail).encode(), "mac.csv")
    assert list(df.columns) == ["a", "b", "c d"] and df["b"].tolist() == [2 * i for i in range(25)]


def test_a_stray_cr_in_a_file_of_newline_lines_is_a_space():
    rows = "".join(f"{i},{i % 3}\n" for i in range(25))
    df = reading.read_table(("wind\rspeed,y\n" + rows).encode(), "x.csv")
    assert list(df.columns) == ["wind speed", "y"]


@pytest.mark.parametrize("at_row", [1, 20, 2_000])
def test_a_nul_character_anywhere_is_refused_not_read_as_text(at_row):
    rows = [f"{i},{i % 7}.5,{i % 3}" for i in range(3_000)]
    rows[at_row] = rows[at_row].replace(".5", ".\x005")
    data = ("a,b,y\n" + "\n".join(rows)).encode()
    message = "not a text file" if data.index(b"\x00") < 4096 else f"NUL character .* on line {at_row + 2:,}"
    with pytest.raises(DataError, match=message):
        reading.read_table(data, "x.csv")


def test_cells_of_only_spaces_are_missing_values(table):
    table = table.astype({"colour": object, "temp": object})
    table.loc[3, "colour"], table.loc[4, "temp"] = "  ", " "
    buffer = io.BytesIO()
    table.to_excel(buffer, index=False)
    df = reading.read_table(buffer.getvalue(), "t.xlsx")
    assert df["colour"].isna().sum() == 1 and df["temp"].isna().sum() == 1
    assert columns.column_kind(df["temp"]) is ColumnKind.NUMERIC
    levels = prepare(df, spec(df, missing="impute")).encoding.categories["colour"]
    assert "" not in levels


def test_a_true_false_column_with_gaps_is_numeric_like_one_without(table):
    flags = ["TRUE", "FALSE", ""] * 10
    df = reading.read_table(("flag,y\n" + "".join(f"{f},{i}\n" for i, f in enumerate(flags))).encode(), "f.csv")
    assert columns.column_kind(df["flag"]) is ColumnKind.NUMERIC
    np.testing.assert_array_equal(columns.as_float(df["flag"])[:3], [1.0, 0.0, np.nan])
    stored = columns.from_parquet_bytes(columns.to_parquet_bytes(df))  # as the run store keeps it
    np.testing.assert_array_equal(columns.as_float(stored["flag"]), columns.as_float(df["flag"]))


def test_large_integer_codes_stay_distinct_levels(table):
    table["id"] = [2 ** 53 + i % 2 for i in range(len(table))]
    levels = prepare(table, spec(table, categorical=("id",))).encoding.categories["id"]
    assert levels == (str(2 ** 53), str(2 ** 53 + 1))


def test_thousands_separators_in_a_tab_separated_file_are_not_read_as_decimal_commas():
    rows = "".join(f"{p}\t{i}\n" for i, p in enumerate(["1,234", "567", "12,000"] * 8))
    df = reading.read_table(("population\ty\n" + rows).encode(), "towns.tsv")
    assert not df.attrs.get("decimal_comma") and df["population"].iloc[0] == 1234.0
    assert df.attrs["formatted"] == ["population"]
    df = reading.read_table(("population;y\n" + rows.replace("\t", ";")).encode(), "towns.csv")
    assert df["population"].iloc[0] == 1.234  # a semicolon file: the European reading


def test_lines_of_bare_delimiters_above_the_header_are_skipped():
    rows = "".join(f"{i};{2 * i};{i % 3}\n" for i in range(25))
    df = reading.read_table((";;\n ; ; \nwind;temp;y\n" + rows).encode(), "export.csv")
    assert list(df.columns) == ["wind", "temp", "y"] and len(df) == 25 and df["wind"].iloc[0] == 0


def test_a_comma_inside_quotes_of_a_comma_separated_file_is_not_a_decimal_comma():
    df = reading.read_table(b'a,b\n' + b'"1,234",1\n"2,500",2\n' * 12, "us.csv")
    assert not df.attrs.get("decimal_comma") and df["a"].iloc[0] == 1234.0  # a thousands separator


def test_a_saved_row_index_is_recognised(table):
    table.insert(0, "Unnamed: 0", range(len(table)))
    table["from_one"] = range(1, len(table) + 1)
    table["shuffled"] = np.random.default_rng(0).permutation(len(table))
    index = {i.name: i.row_index for i in columns.describe_columns(table)}
    assert index == {"Unnamed: 0": True, "temp": False, "colour": False, "count": False, "y": False,
                     "from_one": True, "shuffled": False}


def test_a_wrong_delimiter_names_the_right_one(table):
    with pytest.raises(DataError, match="semicolon"):
        reading.read_table(csv_bytes(table, ";"), "t.csv", delimiter=",")


def test_a_file_that_is_one_column_is_refused():
    content = "just_one\n" + "\n".join(str(i) for i in range(30))
    with pytest.raises(DataError, match="Only one column \\('just_one'\\)"):
        reading.read_table(content.encode(), "one.csv")


def test_a_wrapped_header_becomes_one_line_and_names_that_then_clash_are_refused():
    rows = "".join(f"{i},{2 * i},{i % 3}\n" for i in range(25))
    df = reading.read_table(('"wind\n  speed ",temp,y\n' + rows).encode(), "wrapped.csv")
    assert list(df.columns) == ["wind speed", "temp", "y"]
    with pytest.raises(DataError, match="Column name 'wind speed' appears twice"):
        reading.read_table(('"wind\nspeed","wind speed",y\n' + rows).encode(), "clash.csv")


def test_a_short_table_is_refused_for_training_but_read_as_rows_to_score():
    with pytest.raises(DataError, match="'few.csv' has only 3 data rows; GET needs at least 20"):
        reading.read_table(b"a,b\n1,2\n3,4\n5,6\n", "few.csv")
    assert reading.read_table(b"a,b\n1,2\n3,4\n5,6\n", "few.csv", training=False).shape == (3, 2)
    one = reading.read_table(b"temp\n1.5\n2.5\n", "one.csv", training=False)  # a one-feature model's rows
    assert list(one.columns) == ["temp"] and one["temp"].tolist() == [1.5, 2.5]


def test_prose_is_refused_as_not_a_table_rather_than_as_too_short():
    prose = b"Hello there, this is a note.\nIt has a few lines of prose\nJust words, written by a person.\nThe end.\n"
    with pytest.raises(DataError, match="'notes.txt' does not look like a table: none of its 2 columns holds numbers"):
        reading.read_table(prose, "notes.txt")


@pytest.mark.parametrize("content", [b"", b"   \n\n"])
def test_an_empty_file_is_refused(content):
    with pytest.raises(DataError, match="is empty"):
        reading.read_table(content, "empty.csv")


def test_a_header_without_rows_is_refused():
    with pytest.raises(DataError, match="no data rows"):
        reading.read_table(b"a,b,c\n", "header.csv")


def test_a_single_row_is_refused_with_the_minimum():
    with pytest.raises(DataError, match=f"only 1 data row; GET needs at least {columns.MIN_ROWS}"):
        reading.read_table(b"a,b\n1,2\n", "one_row.csv")


def test_duplicate_column_names_are_named_with_their_positions(table):
    content = b"a,b,a\n" + b"\n".join(b"1,2,3" for _ in range(30))
    with pytest.raises(DataError, match="'a' appears twice.*columns 1 and 3"):
        reading.read_table(content, "dup.csv")


def test_a_ragged_line_names_its_row():
    lines = ["a,b,c"] + ["1,2,3"] * 25
    lines[8] = "1,2,3,4"
    with pytest.raises(DataError, match="Row 8 \\(line 9.*4 fields.*3"):
        reading.read_table("\n".join(lines).encode(), "ragged.csv")


def test_a_ragged_line_after_blank_lines_and_a_wrapped_cell_is_numbered_like_every_other_message():
    lines = ["a,b,c", '1,"two', 'lines",3'] + ["1,2,3"] * 10 + ["", ""] + ["1,2,3"] * 10 + ["1,2,3,4"]
    with pytest.raises(DataError, match="Row 22 \\(line 26 of 'gaps.csv'\\) has 4 fields") as error:
        reading.read_table("\n".join(lines).encode(), "gaps.csv")
    lines[-1] = "1,2,x"  # the same row, now read: a message about its cell must name the same row number
    df = reading.read_table("\n".join(lines).encode(), "gaps.csv")
    assert columns.first_non_number(df["c"])[0] == error.value.row == 22


def test_parquet_and_excel_read_like_csv(table):
    parquet = reading.read_table(columns.to_parquet_bytes(table), "t.parquet")
    buffer = io.BytesIO()
    table.to_excel(buffer, index=False)
    excel = reading.read_table(buffer.getvalue(), "t.xlsx")
    for df in (parquet, excel):
        pd.testing.assert_frame_equal(df.reset_index(drop=True), table, check_dtype=False)


@pytest.mark.parametrize("name, content, message", [
    ("model.pkl", b"\x80\x04K\x01.", "unsupported type '.pkl'"),
    ("old.xls", b"\xd0\xcf\x11\xe0", "save it as .xlsx"),
    ("bad.parquet", b"not parquet at all", "not a readable Parquet"),
    ("bad.xlsx", b"not a zip", "not a readable Excel"),
])
def test_unreadable_or_unsupported_files_are_refused(name, content, message):
    with pytest.raises(DataError, match=message):
        reading.read_table(content, name)


def test_the_row_column_and_cell_limits_are_enforced(monkeypatch, table):
    monkeypatch.setattr(reading.limits, "MAX_ROWS", 30)
    with pytest.raises(DataError, match="more than 30 rows"):
        reading.read_table(csv_bytes(table), "big.csv")
    monkeypatch.setattr(reading.limits, "MAX_COLUMNS", 3)
    with pytest.raises(DataError, match="4 columns; the limit is 3"):
        reading.read_table(csv_bytes(table.head(25)), "wide.csv")
    monkeypatch.setattr(reading.limits, "MAX_COLUMNS", 200)
    monkeypatch.setattr(reading.limits, "MAX_CELLS", 99)
    with pytest.raises(DataError, match="25 rows x 4 columns; the limit is 99 cells"):
        reading.read_table(csv_bytes(table.head(25)), "many.csv")


def test_question_marks_are_missing_values(table):
    content = csv_bytes(table).replace(b"red", b"?", 1)
    df = reading.read_table(content, "q.csv")
    assert df["colour"].isna().sum() == 1


# ------------------------------------------------------------------------------------------ typing
def test_column_kinds():
    n = 40
    df = pd.DataFrame({
        "num": np.arange(n, dtype=float), "flag": [True, False] * 20, "cat": ["a", "b"] * 20,
        "text": [f"comment number {i}" for i in range(n)], "when": [f"2024-01-{1 + i % 28:02d}" for i in range(n)],
        "mixed": [str(i) for i in range(n - 1)] + ["oops"], "empty": [np.nan] * n,
        "numstr": [str(i) for i in range(n)],
    })
    kinds = {info.name: info.kind for info in columns.describe_columns(df)}
    assert kinds == {"num": ColumnKind.NUMERIC, "flag": ColumnKind.NUMERIC, "cat": ColumnKind.CATEGORICAL,
                     "text": ColumnKind.TEXT, "when": ColumnKind.DATETIME, "mixed": ColumnKind.MIXED,
                     "empty": ColumnKind.EMPTY, "numstr": ColumnKind.NUMERIC}


def test_describe_reports_missing_counts_and_ranges(table):
    table.loc[[2, 5], "temp"] = np.nan
    info = {i.name: i for i in columns.describe_columns(table)}["temp"]
    assert info.n_missing == 2 and info.minimum == table["temp"].min() and info.maximum == table["temp"].max()


def test_the_default_target_is_the_column_named_target_else_the_last_numeric(table):
    assert columns.default_target(columns.describe_columns(table)) == "y"
    assert columns.default_target(columns.describe_columns(table.rename(columns={"temp": "target"}))) == "target"


def test_a_text_column_named_target_is_the_default_target_over_the_last_numeric(table):
    """Issue 48: a class table's `target` column of text lost to the last numeric column."""
    classes = table.assign(Target=np.where(table["temp"] > table["temp"].median(), "hot", "cold"))
    assert columns.default_target(columns.describe_columns(classes[["Target", "temp", "y"]])) == "Target"


def test_a_constant_column_named_target_is_still_the_default_target(table):
    flat = table.rename(columns={"temp": "target"}).assign(target=3.0)
    assert columns.default_target(columns.describe_columns(flat)) == "target"  # prepare says why, no silent swap
    assert columns.default_target(columns.describe_columns(table.assign(y=3.0))) != "y"  # unnamed: a varying column


# ------------------------------------------------------------------------------------------ encoding
def test_categorical_columns_are_one_hot_encoded_and_shown_by_name(table):
    prepared = prepare(table, spec(table))
    assert prepared.feature_names == ["temp", "colour=blue", "colour=green", "colour=red", "count"]
    one_hot = prepared.X[:, 1:4]
    assert np.all(one_hot.sum(axis=1) == 1)
    assert np.array_equal(one_hot[:, 2] == 1, (table["colour"] == "red").to_numpy())
    np.testing.assert_array_equal(prepared.y, table["y"].to_numpy())


def test_numeric_codes_can_be_one_hot_encoded_on_request(table):
    prepared = prepare(table, spec(table, categorical=("count",)))
    assert [n for n in prepared.feature_names if n.startswith("count=")] == [f"count={i}" for i in range(5)]


def test_the_encoding_transforms_new_rows_like_the_training_rows(table):
    prepared = prepare(table, spec(table))
    encoding = Encoding.from_dict(prepared.encoding.to_dict())
    np.testing.assert_array_equal(encoding.transform(table), prepared.X)
    unseen = table.head(2).assign(colour=["purple", "red"])
    assert encoding.transform(unseen)[0, 1:4].tolist() == [0, 0, 0]


def test_missing_features_are_dropped_with_counts(table):
    table.loc[[3, 7], "temp"] = np.nan
    table.loc[7, "colour"] = np.nan
    table.loc[11, "y"] = np.nan
    prepared = prepare(table, spec(table, missing="drop"))
    assert (prepared.n_target_missing, prepared.n_dropped, len(prepared.y)) == (1, 2, 37)
    assert 3 not in prepared.row_ids and 11 not in prepared.row_ids


def test_missing_features_are_imputed_with_median_and_most_frequent_value(table):
    table.loc[[3, 7], "temp"] = np.nan
    table.loc[[4], "colour"] = np.nan
    table.loc[11, "y"] = np.nan  # a missing target is never imputed
    prepared = prepare(table, spec(table, missing="impute"))
    assert (prepared.n_target_missing, prepared.n_dropped, len(prepared.y)) == (1, 0, 39)
    assert prepared.imputed == {"temp": 2, "colour": 1}
    median = table.drop(index=11)["temp"].median()
    row = list(prepared.row_ids).index(3)
    assert prepared.X[row, 0] == pytest.approx(median)
    assert prepared.encoding.impute["colour"] == table.drop(index=11)["colour"].mode()[0]


def test_fill_values_and_levels_are_learned_from_the_fit_rows_only(table):
    table.loc[[3, 30], "temp"] = np.nan
    table.loc[35:, "temp"] = 1000.0  # rows outside the fit rows: they must not move the median
    table.loc[:34, "colour"] = "red"
    table.loc[36, "colour"] = "violet"  # a level only outside the fit rows
    fit = np.arange(35)
    prepared = prepare(table, spec(table, missing="impute"), fit_rows=fit)
    assert prepared.encoding.impute["temp"] == pytest.approx(table.loc[:34, "temp"].median())
    assert prepared.encoding.categories["colour"] == ("red",)
    assert prepared.X[36, prepared.feature_names.index("colour=red")] == 0.0  # unseen level: all indicators 0
    assert "violet" in prepare(table, spec(table, missing="impute")).encoding.categories["colour"]


def test_values_a_model_never_saw_are_counted_per_column(table):
    table.loc[:, "colour"] = "red"
    encoding = prepare(table, spec(table)).encoding
    rows = table.head(4).assign(colour=["red", " violet", "violet", "teal"])
    assert encoding.unseen_levels(rows) == {"colour": (3, ("teal", "violet"))}
    assert encoding.unseen_levels(table.head(4)) == {}


def test_a_column_with_no_value_in_the_fit_rows_cannot_be_imputed(table):
    table.loc[:9, "temp"] = np.nan
    with pytest.raises(DataError, match="Column 'temp' has no value in the rows used for training") as error:
        prepare(table, spec(table, missing="impute"), fit_rows=np.arange(10))
    assert error.value.column == "temp"


def test_a_non_numeric_target_is_refused(table):
    with pytest.raises(DataError, match="Target 'colour' is not numeric.*choose a numeric target") as error:
        prepare(table, spec(table, target="colour"))
    assert error.value.column == "colour"


def test_a_target_with_a_stray_word_names_its_row(table):
    table["y"] = table["y"].astype(object)
    table.loc[6, "y"] = "n.a."
    with pytest.raises(DataError, match="Target 'y'.*row 7 has 'n.a.'"):
        prepare(table, spec(table))


def test_a_constant_target_is_refused(table):
    table["y"] = 2.5
    with pytest.raises(DataError, match="same value \\(2.5\\) in every usable row"):
        prepare(table, spec(table))


def test_an_all_missing_column_is_refused_by_name(table):
    table["blank"] = np.nan
    with pytest.raises(DataError, match="'blank' \\(empty\\) cannot be used as feature") as error:
        prepare(table, spec(table))
    assert error.value.column == "blank"


def test_text_and_datetime_columns_are_refused_by_name(table):
    table["note"] = [f"free text {i}" for i in range(len(table))]
    table["day"] = pd.date_range("2024-01-01", periods=len(table)).astype(str)
    with pytest.raises(DataError, match="'note' \\(text\\), 'day' \\(datetime\\) cannot be used as features"):
        prepare(table, spec(table))


def test_an_infinite_value_names_its_row(table):
    table.loc[4, "temp"] = np.inf
    with pytest.raises(DataError, match="'temp' is infinite in row 5"):
        prepare(table, spec(table))


def test_a_value_too_large_to_scale_names_its_row(table):
    table.loc[2, "y"], table.loc[6, "temp"] = 1e308, -1e308
    with pytest.raises(DataError, match="Target 'y' is 1e\\+308, beyond ±1e\\+150 .* in row 3"):
        prepare(table, spec(table))
    table.loc[2, "y"] = 0.0
    with pytest.raises(DataError, match="'temp' is -1e\\+308, beyond .* in row 7: fix or clear that cell"):
        prepare(table, spec(table))
    encoding = prepare(table.drop(index=6), spec(table)).encoding
    with pytest.raises(DataError, match="'temp' is infinite in row 2"):  # rows to score, as on Predict
        encoding.transform(table.head(3).assign(temp=[1.0, np.inf, 2.0]).set_axis([1, 2, 3]))


def test_duplicated_column_labels_are_refused_by_name_not_with_an_attribute_error(table):
    doubled = pd.concat([table, table[["temp"]]], axis=1)  # two columns labelled 'temp'
    with pytest.raises(DataError, match="The table has 2 columns named 'temp': rename them") as error:
        prepare(doubled, spec(table))
    assert error.value.column == "temp"


@pytest.mark.parametrize("column", ["temp", "y"])
def test_a_complex_column_is_refused_not_cut_to_its_real_part(table, column):
    table[column] = table[column] + 1j
    with pytest.raises(DataError, match=f"Column '{column}' holds complex numbers"):
        prepare(table, spec(table))


def test_model_inputs_must_have_distinct_names_that_a_file_can_hold(table):
    clash = table.assign(**{"colour=red": 1.0})  # and level 'red' of 'colour' makes the input 'colour=red' too
    with pytest.raises(DataError, match="'colour=red' appears more than once: rename that column"):
        prepare(clash, spec(clash))
    surrogate = table.set_axis(pd.Index(["temp", "colour", "\udcff", "y"], dtype=object), axis=1)
    with pytest.raises(DataError, match="lone surrogate"):
        prepare(surrogate, spec(surrogate))


def test_too_few_rows_after_dropping_says_how_to_keep_them(table):
    table.loc[: len(table) - 10, "temp"] = np.nan
    table.loc[0, "temp"] = np.nan
    with pytest.raises(DataError, match="Only 9 usable rows.*choose 'impute'"):
        prepare(table, spec(table))


@pytest.mark.parametrize("bad, message", [
    (DataSpec("y", ()), "No feature columns"),
    (DataSpec("y", ("temp", "y")), "target and cannot also be a feature"),
    (DataSpec("nope", ("temp",)), "'nope' is not in the table"),
    (DataSpec("y", ("temp",), missing="guess"), "Missing values policy"),
])
def test_invalid_choices_are_refused(table, bad, message):
    with pytest.raises(DataError, match=message):
        prepare(table, bad)


def test_too_many_categories_are_refused(table, monkeypatch):
    monkeypatch.setattr(encoding, "MAX_CATEGORIES", 3)  # colour has 3 levels, count 5
    prepare(table, spec(table))
    with pytest.raises(DataError, match="Column 'count' has 5 distinct values; a categorical column may have at most 3"):
        prepare(table, spec(table, categorical=("count",)))


def test_nullable_columns_are_imputed(table):
    table["count"] = pd.array([None if i % 9 == 0 else int(v) for i, v in enumerate(table["count"])], dtype="Int64")
    table["flag"] = pd.array([None if i % 7 == 0 else bool(i % 2) for i in range(len(table))], dtype="boolean")
    prepared = prepare(table, spec(table, missing="impute"), fit_rows=np.arange(31))
    fill = float(np.median(table["count"].iloc[:31].dropna().to_numpy(dtype=float)))
    assert prepared.encoding.impute["count"] == fill and prepared.X[0, prepared.feature_names.index("count")] == fill
    assert np.isfinite(prepared.X).all()
    prepare(table, spec(table, missing="impute", categorical=("count",)))  # codes, filled with the most frequent


def test_numbers_used_as_codes_encode_alike_whatever_their_dtype(table):
    table["code"] = [float(i % 3 + 1) for i in range(len(table))]
    table.loc[5, "code"] = np.nan  # a blank: the column is read as floats
    trained = prepare(table, spec(table, categorical=("code",), missing="impute")).encoding
    assert trained.categories["code"] == ("1", "2", "3")
    ints = table.head(6).assign(code=[1, 2, 3, 1, 2, 3])  # the same codes read from a file without blanks
    floats = table.head(6).assign(code=[1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(trained.transform(ints), trained.transform(floats))
    assert trained.unseen_levels(ints) == {} and trained.unseen_levels(ints.assign(code=4)) == {"code": (6, ("4",))}
    stored_earlier = Encoding.from_dict({**trained.to_dict(), "categories": {"colour": list(
        trained.categories["colour"]), "code": ["1.0", "2.0", "3.0"]}, "impute": {"code": "1.0"}})
    np.testing.assert_array_equal(stored_earlier.transform(floats), trained.transform(floats))  # old runs rebuild
    text = floats.assign(code=["1.0", " 2.00", "3", "1", "2.0", "3."])  # a text cell elsewhere made them text
    np.testing.assert_array_equal(trained.transform(text), trained.transform(floats))
    assert trained.unseen_levels(text.assign(code=["007", "1.5", "a", "1", "2", "3e0"])) == {
        "code": (4, ("007", "1.5", "3e0", "a"))}  # only whole numbers written as floats are respelled


def test_codes_that_differ_as_text_stay_distinct_levels_in_new_and_stored_runs(table):
    table["version"] = ["1.1", "1.10", "2.0", "12345678901234567.0", "12345678901234568.0"] * 8
    trained = prepare(table, spec(table, categorical=("version",))).encoding
    assert trained.categories["version"] == ("1.1", "1.10", "12345678901234567", "12345678901234568", "2")
    stored = Encoding.from_dict({**trained.to_dict(), "categories": {**trained.categories, "version": [
        "1", "1.0", "1.10"]}})  # an earlier run kept '1' and '1.0' apart, as text
    rows = table.head(3).assign(version=["1", "1.0", "1.10"])
    version = stored.transform(rows)[:, -3:]  # 'version' is the last feature: its three indicators
    np.testing.assert_array_equal(version, np.eye(3))  # one indicator per row, the stored spelling first


def test_parquet_bytes_round_trip_and_fingerprint_is_sha256(table):
    blob = columns.to_parquet_bytes(table)
    pd.testing.assert_frame_equal(columns.from_parquet_bytes(blob), table, check_dtype=False)
    assert len(columns.fingerprint(blob)) == 64 and columns.fingerprint(blob) == columns.fingerprint(bytes(blob))


def test_distinct_values_count_numbers_as_numbers_and_text_as_text():
    df = pd.DataFrame({"x": [0.0, -0.0, 1.0, 1.0, np.nan], "flag": [True, False, True, True, True],
                       "code": ["1", 1, "a", "a", None]})
    distinct = {info.name: info.n_distinct for info in columns.describe_columns(df)}
    assert distinct == {"x": 2, "flag": 2, "code": 2}


def test_squeezed_features_of_a_large_table_read_a_sample_of_its_rows_and_its_whole_range():
    rng = np.random.default_rng(0)
    X = rng.random((3 * columns.SQUEEZE_SAMPLE_ROWS + 7, 3))
    X[rng.choice(len(X), 500, replace=False), 1] = 9999.0  # a missing-value code in 0.2% of the rows
    X[-1, 2] = 50.0  # one far value, past the sample's rows: the range is every row's
    assert columns.squeezed_features(X) == [1, 2]
