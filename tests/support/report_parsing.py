"""Reading the reports of `tb-pipeline diff` back as a reader's tool would:
markdown through a CommonMark parser with GitHub's tables (markdown-it-py),
HTML through the standard library's parser, JUnit through xml.etree.
Nothing here knows how the report was written."""
from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

from markdown_it import MarkdownIt


def markdown_tables(text: str) -> list[dict]:
    """Every table: {"title": the <summary> of the fold it sits in (None
    outside one), "header": [cell text], "rows": [[cell text]]}; a cell's
    text as rendered (escapes resolved, no ** or backticks)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    tables, title, current, row = [], None, None, None
    for i, tok in enumerate(tokens):
        if tok.type == "html_block":
            found = re.search(r"<summary>(.*?)</summary>", tok.content, re.S)
            if found:
                title = html.unescape(found.group(1))
            elif "</details>" in tok.content:
                title = None
        elif tok.type == "table_open":
            current = {"title": title, "header": [], "rows": []}
        elif tok.type == "tr_open":
            row = []
        elif tok.type == "inline" and current is not None and row is not None:
            row.append(_plain(tok))
        elif tok.type == "tr_close" and current is not None:
            if not current["header"]:
                current["header"] = row
            else:
                current["rows"].append(row)
            row = None
        elif tok.type == "table_close":
            tables.append(current)
            current = None
    return tables


def markdown_headings(text: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(text)
    return [_plain(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]


def _plain(inline) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[dict]]] = {}
        self._table = None
        self._cell = None
        self.text_of: dict[str, str] = {}
        self._ids: list[tuple[str, str]] = []  # (tag, id) of open elements with an id

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self._ids.append((tag, a["id"]))
            self.text_of.setdefault(a["id"], "")
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id", f"table{len(self.tables)}"), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = {"text": "", "value": a.get("data-value"), "tag": tag, "class": a.get("class", "")}
            self._table[-1].append(self._cell)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._cell = None
        elif tag == "table":
            self._table = None
        if self._ids and self._ids[-1][0] == tag:
            self._ids.pop()

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data
        for _, eid in self._ids:
            self.text_of[eid] += data


def html_tables(text: str) -> tuple[dict[str, list[list[dict]]], dict[str, str]]:
    """({table id: rows of cells {"text", "value" (data-value), "tag"}}, {element id: its text})."""
    parser = _Tables()
    parser.feed(text)
    return parser.tables, parser.text_of


def junit_cases(text: str) -> tuple[ET.Element, list[dict]]:
    """(the <testsuites> root, each testcase in order as {"classname", "name", "properties", "failure",
    "error", "out"}: "out" the text of its <system-out>)."""
    root = ET.fromstring(text.encode("utf-8"))
    cases = []
    for case in root.iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out = case.find("system-out")
        cases.append({"classname": case.get("classname"), "name": case.get("name"), "properties": props,
                      "failure": case.find("failure"), "error": case.find("error"),
                      "out": None if out is None else out.text})
    return root, cases
