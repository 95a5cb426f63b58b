"""A report as one self-contained HTML page: plots embedded, styles and scripts inline.

:func:`write_html` turns a report's Markdown (the subset the reports write:
headings, paragraphs, lists, tables, images, bold, code) into ``report.html``
beside it: each image read from the report's folder and embedded as a
``data:`` URI with its alt text, the summary figure moved to the top, every
table given column headers and made sortable by a click on a header (a few
lines of inline script), and no request to the network. Colours are never
the only sign: flagged rows carry a word and a mark as well.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

__all__ = ["image", "page", "table", "to_html", "write_html"]

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 70rem; margin: 1rem auto;
       padding: 0 1rem; color: #111; background: #fff; }
img { max-width: 100%; height: auto; }
figure { margin: 1rem 0; }
table { border-collapse: collapse; margin: 0.8rem 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #999; padding: 0.2rem 0.5rem; text-align: left; }
th { background: #e8e8e8; }
th button { font: inherit; font-weight: bold; border: 0; background: none; cursor: pointer;
            padding: 0; }
th[aria-sort="ascending"] button::after { content: " ▲"; }
th[aria-sort="descending"] button::after { content: " ▼"; }
tr.slower td { background: #222; color: #fff; font-weight: bold; }
tr.faster td { background: #d9d9d9; font-style: italic; }
code { background: #f0f0f0; padding: 0 0.2rem; }
"""

#: Sorts a table by the clicked column: numbers (with a unit of time) as numbers.
SCRIPT = """
const UNITS = {ns: 1e-9, "µs": 1e-6, us: 1e-6, ms: 1e-3, s: 1};
function sortKey(cell) {
  const text = (cell.dataset.sort || cell.textContent).trim();
  const match = text.match(/^([-+]?[0-9.]+(?:e[-+]?[0-9]+)?)\\s*(ns|µs|us|ms|s)?\\b/i);
  return match ? parseFloat(match[1]) * (UNITS[match[2]] || 1) : text.toLowerCase();
}
document.querySelectorAll("table").forEach(table => {
  table.querySelectorAll("thead th").forEach((th, column) => {
    th.querySelector("button").addEventListener("click", () => {
      const up = th.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("thead th").forEach(h => h.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", up ? "ascending" : "descending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = sortKey(a.cells[column]), y = sortKey(b.cells[column]);
        const order = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0)
                                            : (typeof x === "number" ? -1 : 1);
        return up ? order : -order;
      });
      rows.forEach(row => body.appendChild(row));
    });
  });
});
"""


def page(title: str, body: str) -> str:
    """A whole HTML document: ``body`` with the inline style and the sorting script.

    >>> "<title>r &amp; d</title>" in page("r & d", "<p>x</p>")
    True
    """
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"{body}\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def image(png: bytes, alt: str) -> str:
    """A figure embedding ``png`` as a data URI, with ``alt`` as its text.

    >>> image(b"PNG", 'a "plot"')
    '<figure><img src="data:image/png;base64,UE5H" alt="a &quot;plot&quot;"></figure>'
    """
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(alt)}"></figure>'


def _table(headers: list[str], rows: list[str]) -> str:
    """A table from its headers' and rows' HTML: each header a button that sorts."""
    head = "".join(f'<th scope="col"><button type="button">{h}</button></th>' for h in headers)
    body = "\n".join(rows)
    return f"<table><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>"


def table(headers: list[str], rows: list[tuple[list, str]]) -> str:
    """A sortable table: ``rows`` are ``(cells, class)``; a cell is text or ``(text, sort
    key)``.

    >>> lines = table(["mode"], [(["f"], "slower")]).splitlines()
    >>> lines[0].count('<th scope="col">'), lines[2]
    (1, '<tr class="slower"><td>f</td></tr>')
    """
    lines = []
    for cells, kind in rows:
        tds = []
        for value in cells:
            text, key = value if isinstance(value, tuple) else (value, None)
            sort = f' data-sort="{html.escape(str(key))}"' if key is not None else ""
            tds.append(f"<td{sort}>{html.escape(str(text))}</td>")
        row_class = f' class="{kind}"' if kind else ""
        lines.append(f"<tr{row_class}>{''.join(tds)}</tr>")
    return _table([html.escape(h) for h in headers], lines)


_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', text)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _markdown_table(lines: list[str]) -> str:
    body = [line for line in lines[1:] if not re.fullmatch(r"[|\s:-]+", line)]
    rows = [
        "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in _cells(line)) + "</tr>" for line in body
    ]
    return _table([_inline(h) for h in _cells(lines[0])], rows)


def _image(match: re.Match, folder: Path) -> str:
    alt, source = match.groups()
    path = folder / source
    if not path.is_file() or path.suffix.lower() != ".png":
        return f"<p>{_inline(alt)} (figure {html.escape(source)} not found)</p>"
    return image(path.read_bytes(), alt)


def _single(line: str) -> bool:
    return line.startswith(("#", "!["))


def _blocks(lines: list[str]):
    """Group lines into blocks: a heading, an image, a table, a list, or a paragraph."""
    block: list[str] = []
    for line in [*lines, ""]:
        table = line.startswith("|")
        ends = block and (
            not line.strip()
            or _single(line)
            or _single(block[0])
            or table != block[0].startswith("|")
        )
        if ends:
            yield block
            block = []
        if line.strip():
            block.append(line)


def to_html(markdown: str, folder: str | Path = ".") -> str:
    """The body HTML of a report's Markdown; images are read from ``folder``.

    The figure whose file is ``summary.png`` is moved right below the title.

    >>> lines = to_html("# Report\\n\\nSome **bold** text.\\n\\n| a | b |\\n|---|---|\\n| 1 | 2 |")
    >>> print("\\n".join(lines.splitlines()[:2] + lines.splitlines()[-2:]))
    <h1>Report</h1>
    <p>Some <strong>bold</strong> text.</p>
    <tr><td>1</td><td>2</td></tr>
    </tbody></table>
    """
    folder = Path(folder)
    parts, summary = [], None
    for block in _blocks(markdown.splitlines()):
        first = block[0]
        if first.startswith("#"):
            level = min(len(first) - len(first.lstrip("#")), 6)
            parts.append(f"<h{level}>{_inline(first[level:].strip())}</h{level}>")
        elif first.startswith("!["):
            for match in _IMAGE.finditer(first):
                figure = _image(match, folder)
                if Path(match.group(2)).stem == "summary":
                    summary = figure
                else:
                    parts.append(figure)
        elif first.startswith("|"):
            parts.append(_markdown_table(block))
        elif first.lstrip().startswith(("- ", "* ")):
            items = []
            for line in block:
                if line.lstrip().startswith(("- ", "* ")):
                    items.append(line.lstrip()[2:])
                else:
                    items[-1] += " " + line.strip()
            parts.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
        else:
            parts.append(f"<p>{_inline(' '.join(line.strip() for line in block))}</p>")
    if summary is not None:
        parts.insert(1 if parts and parts[0].startswith("<h1>") else 0, summary)
    return "\n".join(parts)


def write_html(markdown_path: str | Path, html_path: str | Path | None = None) -> Path:
    """Write the Markdown report at ``markdown_path`` as a self-contained HTML page
    (default: the same name ending ``.html``); returns its path."""
    markdown_path = Path(markdown_path)
    html_path = Path(html_path) if html_path else markdown_path.with_suffix(".html")
    text = markdown_path.read_text(encoding="utf-8")
    titles = [line[2:].strip() for line in text.splitlines() if line.startswith("# ")]
    title = titles[0] if titles else markdown_path.stem
    html_path.write_text(page(title, to_html(text, markdown_path.parent)), encoding="utf-8")
    return html_path
