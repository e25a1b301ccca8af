"""The report's parts and its writers, shared by the data-parallel report (report.py) and the large-model
report (llm_report.py): Figure, Section, Report; a chart as PNG with the labels it shows; the HTML page
(self-contained, plots embedded, tables split into parts of at most MAX_HTML_COLUMNS columns so none runs off
a 1400-px page) and the Markdown file with its folder of PNGs."""

from __future__ import annotations

import base64
import html
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costopt.core.checks import output_path, write_bytes_atomic, write_text
from costopt.core.errors import InputError
from costopt.core.files import json_safe
from costopt.core.neutral import markdown_cell, markdown_json, markdown_text


@dataclass
class Figure:
    name: str  # file stem / element id suffix
    title: str
    png: bytes
    labels: list[str] = field(default_factory=list)  # what the chart names: legend entries and axis tick labels


@dataclass
class Section:
    id: str
    title: str
    intro: str
    tables: list[tuple[list[str], list[list[str]]]] = field(default_factory=list)  # (header, rows)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lists: list[tuple[str, list[str]]] = field(default_factory=list)  # (heading, bullet points), after the intro
    css_class: str = ""  # "summary": the boxed first screen


@dataclass
class Report:
    title: str
    subtitle: str
    solve_json: dict[str, Any]
    sections: list[Section]
    data: dict[str, Any] = field(default_factory=dict)  # more JSON embedded as <script id="costopt-KEY">

    def section(self, sid: str) -> Section:
        return next(s for s in self.sections if s.id == sid)



def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    _plt().close(fig)
    return buf.getvalue()




def chart_labels(fig) -> list[str]:
    """The names a chart shows: its legend entries (axes and figure legends) and its tick labels."""
    out = []
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    for lg in legends:
        if lg is not None:
            out += [t.get_text() for t in lg.get_texts()]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.get_yticklabels() + ax.get_xticklabels() if t.get_text()]
    return out


def figure(name: str, title: str, fig) -> Figure:
    """A Figure of a matplotlib figure: its PNG and the labels it shows (`chart_labels`)."""
    fig.canvas.draw()  # tick labels are set at draw time
    labels = chart_labels(fig)
    return Figure(name, title, _png(fig), labels)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1280px;color:#222;
background:#fff;padding:0 1em}
.summary{border:2px solid #1f77b4;border-radius:6px;padding:.2em 1.2em .8em;background:#f7faff}
.summary h2{margin-top:.6em}.summary .rec{font-size:1.15em;font-weight:600}.summary h3{margin:.6em 0 .2em;font-size:1em}
.summary ul{margin:.2em 0}.prov{color:#444;font-size:.85em}
td{overflow-wrap:normal;word-break:normal}td.num{white-space:nowrap;text-align:right}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #1f77b4;padding-bottom:.2em;margin-top:2em}
.sub{color:#555}table{border-collapse:collapse;margin:1em 0;font-size:.85em;max-width:100%}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#eef3fa}
tr:nth-child(even) td{background:#fafafa}img{max-width:100%;border:1px solid #eee}.note{color:#666;font-size:.85em}
nav a{margin-right:1em}
"""


MAX_HTML_COLUMNS = 9  # a wider table is split into parts that repeat its key columns, so it fits a 1400-px page
_NUMERIC = re.compile(r"[-+$≈~]*[\d,.]+(%|x| ms| h)?")  # a cell that is one number: kept on one line


def split_columns(header: list[str], rows: list[list[str]], most: int = MAX_HTML_COLUMNS):
    """The table as parts of at most `most` columns, each repeating the key columns (the first, or '#' and the
    next when the first is a rank), in order; a table that fits is one part."""
    if len(header) <= most:
        return [(header, rows)]
    keys = 2 if header[0] == "#" else 1
    rest = list(range(keys, len(header)))
    per = most - keys
    n = -(-len(rest) // per)
    size = -(-len(rest) // n)  # balanced parts
    parts = []
    for k in range(n):
        idx = list(range(keys)) + rest[k * size:(k + 1) * size]
        parts.append(([header[j] for j in idx], [[r[j] for j in idx] for r in rows]))
    return parts


def to_html(rep: Report) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{e(rep.title)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>{e(rep.title)}</h1>", f'<p class="sub">{e(rep.subtitle)}</p>',
           "<nav>" + "".join(f'<a href="#{s.id}">{e(s.title)}</a>' for s in rep.sections) + "</nav>"]
    for s in rep.sections:
        cls = f' class="{e(s.css_class)}"' if s.css_class else ""
        out.append(f'<section id="{s.id}"{cls}><h2>{e(s.title)}</h2><p class="rec">{e(s.intro)}</p>' if s.css_class
                   else f'<section id="{s.id}"><h2>{e(s.title)}</h2><p>{e(s.intro)}</p>')
        for heading, items in s.lists:
            out.append(f"<h3>{e(heading)}</h3><ul>" + "".join(f"<li>{e(i)}</li>" for i in items) + "</ul>")
        for header, rows in s.tables:
            for part_header, part_rows in split_columns(header, rows):
                out.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in part_header)
                           + "</tr></thead><tbody>")
                out.extend("<tr>" + "".join(f'<td class="num">{e(c)}</td>' if _NUMERIC.fullmatch(c) else f"<td>{e(c)}</td>"
                                            for c in r) + "</tr>" for r in part_rows)
                out.append("</tbody></table>")
        for f in s.figures:
            b64 = base64.b64encode(f.png).decode("ascii")
            series = e(json.dumps(f.labels))
            out.append(f'<figure id="fig-{f.name}" data-labels="{series}"><img alt="{e(f.title)}" '
                       f'src="data:image/png;base64,{b64}"></figure>')
        out.extend(f'<p class="note">{e(n)}</p>' for n in s.notes)
        out.append("</section>")
    data = json.dumps(json_safe(rep.solve_json)).replace("</", "<\\/")
    out.append(f'<script type="application/json" id="costopt-solve">{data}</script>')
    for key, value in rep.data.items():
        extra = json.dumps(json_safe(value)).replace("</", "<\\/")
        out.append(f'<script type="application/json" id="costopt-{e(key)}">{extra}</script>')
    out.append("</body></html>")
    return "\n".join(out)


# A folder of figures is ours when it holds this file: `report` writes images only into a folder it
# created (and marked) itself, never into a folder of the user's that happens to have the same name.
FIGURE_DIR_MARK = ".costopt-report"


def refuse_rent_terms_without_cloud(catalog, cloud, *, hours: float | None = None, utilization: float | None = None,
                                    max_instances: int | None = None) -> None:
    """A report's rent-or-buy terms are refused (exit 2, naming the option) where nothing is rented: without
    --cloud, `utilization` has no section to price; with an owned `catalog` too, neither do `hours` nor
    `max_instances`. Both reports call it (report.py, llm_report.py)."""
    if cloud is not None:
        return
    if utilization is not None:
        raise InputError("--utilization: how busy the purchase is beside a rent; only with --cloud FILE (the "
                         "rent-or-buy section)", field="utilization")
    if catalog.is_cloud:
        return
    name = catalog.path or catalog.catalog.name
    if hours is not None:
        raise InputError(f"--hours prices rented designs (or, with --cloud, the hours the purchase is used); {name} "
                         "is an owned catalog", field="hours")
    if max_instances is not None:
        raise InputError(f"--max-instances: {name} is not a cloud catalog (use --max-nodes, or --cloud FILE, whose "
                         "instances it caps)", field="max_instances")


def figure_dir_for(out: str | Path) -> Path:
    """Where a Markdown report's PNGs go: `<stem>_files/` beside it."""
    out = Path(out)
    return out.parent / f"{out.stem}_files"


def check_figure_dir(figure_dir: Path) -> None:
    """Refuse a figure folder that exists and is not marked as made by `costopt report`."""
    if figure_dir.exists() and not (figure_dir.is_dir() and (figure_dir / FIGURE_DIR_MARK).is_file()):
        raise InputError(f"--out: {figure_dir} already exists and was not made by costopt report; refusing to write "
                         f"figures into it (move it away or choose another --out name)", field="--out")


def _own_figure_dir(figure_dir: Path) -> None:
    check_figure_dir(figure_dir)
    if not figure_dir.exists():
        figure_dir.mkdir()
        (figure_dir / FIGURE_DIR_MARK).write_text("figures written by costopt report; safe to overwrite\n",
                                                  encoding="utf-8")


def to_markdown(rep: Report, figure_dir: Path, rel: str) -> str:
    """Markdown with figures written as PNG files into `figure_dir` (linked as `rel/<name>.png`).

    `figure_dir` must be new or one this function made before (it holds FIGURE_DIR_MARK)."""
    _own_figure_dir(figure_dir)
    # catalog text (names, sources) is third-party: HTML-escaped, one line per cell (core/neutral.py)
    md, cell = markdown_text, markdown_cell
    out = [f"# {md(rep.title)}", "", md(rep.subtitle), ""]
    for s in rep.sections:
        out += [f'## {md(s.title)} <a id="{md(s.id)}"></a>', "", md(s.intro), ""]
        for heading, items in s.lists:
            out += [f"**{md(heading)}**", ""] + [f"- {md(i)}" for i in items] + [""]
        for header, rows in s.tables:
            out.append("| " + " | ".join(map(cell, header)) + " |")
            out.append("|" + "---|" * len(header))
            out.extend("| " + " | ".join(map(cell, r)) + " |" for r in rows)
            out.append("")
        for f in s.figures:
            write_bytes_atomic(figure_dir / f"{f.name}.png", f.png, "--out")
            out += [f"![{cell(f.title).replace('[', '(').replace(']', ')')}]({rel}/{f.name}.png)", ""]
        out += [f"_{md(n)}_" for n in s.notes] + ([""] if s.notes else [])
    out += ["<details><summary>solve JSON</summary>", "", "```json",
            markdown_json(json.dumps(json_safe(rep.solve_json), indent=1)), "```", "</details>", ""]
    for key, value in rep.data.items():
        out += [f"<details><summary>{md(key)} JSON</summary>", "", "```json",
                markdown_json(json.dumps(json_safe(value), indent=1)), "```", "</details>", ""]
    return "\n".join(out)


def write_report(rep: Report, out: str | Path, inputs: list = ()) -> list[Path]:
    """Write `.html` (self-contained) or `.md` (+ a `<stem>_files/` folder of PNGs); returns the files.

    Never over one of `inputs`; every file is written atomically; the PNG folder must be new or marked
    as made by an earlier report."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix in (".html", ".htm"):
        write_text(out, to_html(rep), "--out", inputs)
        return [out]
    if suffix == ".md":
        output_path(out, "--out", inputs)
        d = figure_dir_for(out)
        try:
            text = to_markdown(rep, d, d.name)
        except OSError as exc:
            raise InputError(f"--out {out}: cannot write the figures into {d}: {exc.strerror or exc}") from None
        write_text(out, text, "--out", inputs)
        return [out] + sorted(d.glob("*.png"))
    raise InputError(f"--out must end in .html or .md, got '{out.name}'")


__all__ = ["Figure", "Section", "Report", "figure", "chart_labels", "to_html", "to_markdown", "write_report",
           "split_columns", "FIGURE_DIR_MARK", "figure_dir_for", "check_figure_dir"]
