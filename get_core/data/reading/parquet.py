"""Parquet, read by pyarrow: the limits checked on the footer before any column is decoded, then column by column
on what was decoded; text cells that are not UTF-8 and binary columns refused by name."""

from __future__ import annotations

import io

import pandas as pd

from get_core.data import upload_bounds
from get_core.data.columns import DataError
from get_core.data.reading import cells, limits

SUFFIXES = (".parquet", ".pq")
DECODED_MB = 512  # column data once decompressed (the footer's sizes, then what was read); 20,000,000 floats: 153 MB


def read_parquet(data: bytes, filename: str) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # the limits, checked on the footer before any column is decoded
        schema = pq.ParquetFile(io.BytesIO(data)).schema_arrow
        metadata = pq.ParquetFile(io.BytesIO(data)).metadata
        names = [cells.column_name(name) for name in upload_bounds.table_columns(schema)]
        limits.check_size(metadata.num_rows, len(names), filename)
        limits.check_unique(names, filename)
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
    df.columns = [cells.column_name(c) for c in df.columns]
    limits.check_unique(list(df.columns), filename)
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
