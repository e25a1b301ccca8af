"""Third-party text (catalog names, sources, price-list fields, file names) neutralised where it lands.

- Terminal (`terminal_text`): C0 and C1 control characters (ESC starts terminal escape sequences: colours,
  cursor moves, window titles, hyperlinks), DEL and the Unicode bidirectional overrides/isolates (text
  shown in another order than stored) are removed; newline and tab are kept (multi-line cells). The
  CLI's console also prints with rich markup and emoji codes off, so `[red]` in a catalog name is text.
- Spreadsheets (`spreadsheet_cell`, OWASP CSV injection rule): a text cell starting with `=`, `+`, `-`,
  `@`, tab or carriage return would be read as a formula by Excel/LibreOffice/Sheets; it is written with
  a leading `'` (shown as text, the apostrophe hidden by spreadsheet programs). Numbers are untouched.
  For xlsx the characters XML 1.0 cannot hold (C0 controls but tab/newline/CR) are removed too.
- Markdown (`markdown_text`): `&`, `<`, `>` HTML-escaped (raw HTML in a Markdown report would be rendered
  by most viewers), newlines folded to spaces and `|` escaped inside table cells (`markdown_cell`);
  JSON embedded in a code fence gets backticks and `<` as JSON escapes (`markdown_json`): the same data,
  and the fence cannot be closed from inside.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls but \t and \n, DEL, C1 controls; bidi embeddings/overrides (U+202A-202E) and isolates (U+2066-2069)
_TERMINAL_BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def terminal_text(s: str) -> str:
    """`s` without control characters and bidi overrides (newline and tab kept)."""
    return _TERMINAL_BAD.sub("", s) if isinstance(s, str) else s


def spreadsheet_cell(v: Any) -> Any:
    """A cell value safe to open in a spreadsheet: a text starting like a formula gets a leading `'`."""
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return v


def xlsx_cell(v: Any) -> Any:
    """`spreadsheet_cell`, and without the characters an xlsx (XML 1.0) cannot hold."""
    v = spreadsheet_cell(v)
    return _XML_BAD.sub("", v) if isinstance(v, str) else v


def spreadsheet_frame(df):
    """A DataFrame whose text (object) columns went through `spreadsheet_cell`; numeric columns as they are."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    # text columns: object or a string dtype (pandas' str inference), never numbers or booleans
    cols = [c for c in df.columns if not (is_numeric_dtype(df[c]) or is_bool_dtype(df[c]))]
    if not cols:
        return df
    bad = [c for c in cols if df[c].map(lambda v: isinstance(v, str) and v.startswith(_FORMULA_START)).any()]
    if not bad:
        return df
    return df.assign(**{c: df[c].map(spreadsheet_cell) for c in bad})


def markdown_text(s: str) -> str:
    """Text for Markdown prose: HTML special characters escaped, control characters removed."""
    return terminal_text(str(s)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_cell(s: str) -> str:
    """`markdown_text` for a table cell: one line, `|` escaped."""
    return markdown_text(s).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def markdown_json(text: str) -> str:
    """JSON text for a Markdown code fence: backticks and `<` written as JSON escapes (same data)."""
    return text.replace("`", "\\u0060").replace("<", "\\u003c")
