"""The command line's I/O edge: read (probability, label) pairs, write results as JSON.

CSV and TSV (with a header, UTF-8), JSON lines (``.jsonl``; ``.json`` also takes one
document: a list of row objects or an object of column lists), ``.npy`` (an [N, 2] array
or a structured array), ``.npz`` and ``.pt`` (named arrays or tensors, or one [N, 2]
array; several dimensions must line up as the Python API's inputs do). Columns
are found by name (``--probs``/``--target``/``--groups``) or by the usual names. Group
ids (sentence or document ids for the group bootstrap) may be numbers or strings; they
are numbered 0..G-1; labels (``--label``) and item ids (``compare --id``, which pair two
files' rows) are read as text, as written but for a whole number written with zero
decimals (``5.0`` is ``5``). Every problem is a ``ValueError`` (or ``FileNotFoundError``) whose
message names the file and the column, and for a bad value (not a number, a probability
outside [0, 1] or NaN, a label that is not 0/1 or a class id) the row: its line in a
text file (the header's line and blank lines counted; a record over several lines by
its first), its index in an array file.

The steps, each in its module, lower ones first: ``_text`` (CSV/TSV and JSON files as
tables of columns) and ``_arrays`` (array files' contents as numpy), ``_files`` (opening
a file by its suffix), ``_columns`` (which column holds what), ``_values`` (values as
checked tensors, bad ones named by row) and ``_ids`` (group ids, ids as text), ``_read``
(the entries below), ``_pairs`` (two files' rows paired by item ids) and ``_output``
(output paths, writing them, and JSON). Import from this package, not from them.
"""

from calib_metrics.predictions._columns import (
    GROUP_NAMES,
    PROB_NAMES,
    PROBABILITY_NAMES,
    TARGET_NAMES,
    Column,
    SharedName,
    Wanted,
    shared,
)
from calib_metrics.predictions._files import FORMATS
from calib_metrics.predictions._files import _load as _load  # the tests read files with it
from calib_metrics.predictions._output import (
    all_or_none,
    check_csv_path,
    check_figure_path,
    check_output_path,
    check_output_paths,
    check_writable_folder,
    output_failures,
    save_figure,
    text_report_stream,
    to_jsonable,
    writing_output,
)
from calib_metrics.predictions._pairs import paired_by_ids
from calib_metrics.predictions._read import (
    Predictions,
    as_multiclass,
    column_names,
    file_rows,
    group_column,
    group_id_texts,
    has_column,
    item_id_column,
    item_ids,
    read_labels,
    read_table,
    row_position,
    row_positions,
)
from calib_metrics.predictions._text import (
    _DelimitedTable as _DelimitedTable,  # the tests stand in for its reading
)
from calib_metrics.predictions._values import file_row

__all__ = [
    "FORMATS",
    "GROUP_NAMES",
    "PROBABILITY_NAMES",
    "PROB_NAMES",
    "TARGET_NAMES",
    "Column",
    "Predictions",
    "SharedName",
    "Wanted",
    "all_or_none",
    "as_multiclass",
    "check_csv_path",
    "check_figure_path",
    "check_output_path",
    "check_output_paths",
    "check_writable_folder",
    "column_names",
    "file_row",
    "file_rows",
    "group_column",
    "group_id_texts",
    "has_column",
    "item_id_column",
    "item_ids",
    "output_failures",
    "paired_by_ids",
    "read_labels",
    "read_table",
    "row_position",
    "row_positions",
    "save_figure",
    "shared",
    "text_report_stream",
    "to_jsonable",
    "writing_output",
]
