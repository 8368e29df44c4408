"""A document's text and its structure: plain text, Markdown, HTML and PDF.

Every format becomes one *normalised text* (Unicode NFC, line ends `\\n`, each NUL
a space, so the words it parted stay apart; trailing spaces cut) and a list of
`Section`s: each a span of that text (`start`, `end` are character offsets,
`text[start:end]` is the section) with
its position, the heading path above it or the page it is on. Chunks are cut
from sections (`remem.documents.chunk`), so a chunk's span is an exact span of
the normalised text and can be shown, quoted or checked against the source.

Parsing is bounded (`remem.documents.bounds.Bounds`): at most `max_chars`
characters (checked as soon as they are passed: after normalising, or after each
PDF page), `max_pages` pages of a PDF, and `max_seconds` of the parsing thread's
CPU time (checked every `CHECK_LINES` Markdown lines or HTML tags; for a PDF see
`remem.documents.pdf`). Past any of them, `InvalidInput` names the bound and what
to do. The work is linear in the input: a Markdown heading is matched without
backtracking, and an HTML tag, comment or declaration left open at the end (which
the standard library's parser re-scans to the end once for every `<` after it) is
dropped, as a browser drops it.

Pure functions; PDF text comes from pypdf (`pip install 'remem[docs]'`), HTML
from the standard library's `html.parser`. No network, ever.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser

from remem.documents.bounds import (
    CHECK_LINES,
    MAX_DOCUMENT_CHARS,
    Bounds,
    Deadline,
    check_length,
)
from remem.errors import InvalidInput
from remem.policy.dataclasses import shown

__all__ = ["CHECK_LINES", "FORMATS", "MAX_DOCUMENT_CHARS", "Bounds", "Deadline", "Parsed",
           "Section", "check_length", "format_of", "heading_of", "normalise", "parse"]  # fmt: skip
FORMATS = ("text", "markdown", "html", "pdf")
_SUFFIX = {
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
# the marker only: the heading is what follows, its closing `#`s and spaces cut by
# rstrip (a lazy `(.+?)[ \t#]*$` re-scanned a run of spaces once per character of it)
_HEADING = re.compile(r"(#{1,6})[ \t]+(?=[^ \t])")
_BLANK = re.compile(r"\n[ \t]*\n")
# a heading is kept in the position of every chunk under it: cut, so that one long
# heading cannot multiply a document's size by its number of chunks
MAX_HEADING_CHARS = 200


@dataclass(frozen=True, slots=True)
class Section:
    """A span of the normalised text and where it stands: a heading path or a page."""

    start: int
    end: int
    headings: tuple[str, ...] = ()
    page: int | None = None

    def position(self) -> dict[str, object]:
        """The position as JSON: `{"page": n}` or `{"headings": [...]}` (may be empty)."""
        if self.page is not None:
            return {"page": self.page}
        return {"headings": list(self.headings)}


@dataclass(frozen=True, slots=True)
class Parsed:
    """A document as text: the normalised text and its sections, in order."""

    format: str
    text: str
    sections: tuple[Section, ...]


def format_of(name: str, declared: str | None = None) -> str:
    """The format of a document named `name` (a path or a URI): `declared` when given,
    else by its suffix; plain text for an unknown one."""
    if declared is not None:
        if declared not in FORMATS:
            raise InvalidInput(f"format must be one of {', '.join(FORMATS)}; got {shown(declared)}")
        return declared
    lower = name.lower()
    for suffix, fmt in _SUFFIX.items():
        if lower.endswith(suffix):
            return fmt
    return "text"


def normalise(text: str) -> str:
    """The normalised form every span indexes into (see the module docstring)."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = text.replace("\x00", " ")  # PostgreSQL cannot store one; "a\x00b" is two words
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def parse(data: bytes | str, fmt: str, bounds: Bounds | None = None) -> Parsed:
    """`data` (bytes of a file, or text) in format `fmt` as normalised text and sections,
    within `bounds` (default `Bounds()`); InvalidInput past one of them."""
    bounds = bounds or Bounds()
    deadline = bounds.clock()
    if fmt == "pdf":
        if isinstance(data, str):
            raise InvalidInput("a PDF document must be given as bytes, not text")
        return _pdf(data, bounds, deadline)
    text = data if isinstance(data, str) else _decode(data)
    if fmt == "html":
        return _html(text, bounds, deadline)
    text = normalise(text)
    check_length(len(text), bounds.max_chars)
    if fmt == "markdown":
        return _markdown(text, deadline)
    return Parsed("text", text, tuple(_paragraphs(text, 0, len(text), ())))


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"the document is not UTF-8 text (byte {exc.start}); convert it or name its format"
        ) from None


def _paragraphs(text: str, start: int, end: int, headings: tuple[str, ...]) -> list[Section]:
    """The paragraphs (runs between blank lines) of `text[start:end]`, trimmed."""
    out: list[Section] = []
    pos = start
    for m in [*_BLANK.finditer(text, start, end), None]:
        stop = end if m is None else m.start()
        a, b = pos, stop
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if b > a:
            out.append(Section(a, b, headings))
        if m is not None:
            pos = m.end()
    return out


def heading_of(line: str) -> tuple[int, str] | None:
    """A Markdown ATX heading line's level and text (its closing `#`s and spaces cut,
    but never to nothing: `# #` is the heading "#"); None for any other line."""
    m = _HEADING.match(line)
    if m is None:
        return None
    rest = line[m.end() :]
    return len(m.group(1)), (rest.rstrip(" \t#") or rest[:1]).strip()


def _markdown(text: str, deadline: Deadline | None = None) -> Parsed:
    """Sections under each heading path; a heading line itself is no section."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body = 0
    offset = 0
    in_fence = False
    for number, line in enumerate(text.split("\n")):
        if deadline is not None and number % CHECK_LINES == 0:
            deadline.check(f"by line {number + 1}")
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        found = None if in_fence else heading_of(line)
        if found is not None:
            sections += _paragraphs(text, body, offset, tuple(t for _, t in path))
            level, heading = found[0], found[1][:MAX_HEADING_CHARS]
            path = [(lv, t) for lv, t in path if lv < level] + [(level, heading)]
            body = offset + len(line) + 1
        offset += len(line) + 1
    sections += _paragraphs(text, body, len(text), tuple(t for _, t in path))
    return Parsed("markdown", text, tuple(sections))


_BLOCKS = {"p", "div", "li", "pre", "blockquote", "td", "th", "tr", "section", "article", "br"}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SKIP = {"script", "style", "head", "title", "noscript", "template"}


class _HTMLText(HTMLParser):
    """Text of an HTML page as Markdown-like lines: headings become `#` lines. Every
    `CHECK_LINES` tags or runs of text it looks at the deadline."""

    def __init__(self, deadline: Deadline | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.deadline = deadline
        self.seen = 0

    def _tick(self) -> None:
        self.seen += 1
        if self.deadline is not None and self.seen % CHECK_LINES == 0:
            self.deadline.check(f"by line {self.getpos()[0]} of its HTML")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tick()
        if tag in _SKIP:
            self.skip += 1
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        self._tick()
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS or tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        self._tick()
        if not self.skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def _html(source: str, bounds: Bounds | None = None, deadline: Deadline | None = None) -> Parsed:
    bounds = bounds or Bounds()
    parser = _HTMLText(deadline)
    try:
        # fed whole, the parser stops at a tag, comment or declaration that is not closed
        # before the end and keeps the rest; `close()` would then take its `<` for text
        # and parse again from the next `<`, to the end each time (quadratic: 16,000
        # `<a ` took 28 s). Left open at the end it is markup, not text: dropped.
        parser.feed(source)
        if not parser.rawdata.startswith("<"):
            parser.close()
    except AssertionError:  # the standard library's parser on a `<!` it does not know
        line = parser.getpos()[0]
        raise InvalidInput(
            f"the HTML could not be read: a malformed `<!` declaration near line {line}; "
            "remove it, or add the document as text"
        ) from None
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    text = normalise("\n".join(lines))
    check_length(len(text), bounds.max_chars)
    parsed = _markdown(text, deadline)
    return Parsed("html", parsed.text, parsed.sections)


def _pdf(data: bytes, bounds: Bounds, deadline: Deadline) -> Parsed:
    from remem.documents.pdf import page_texts  # pypdf loads for a PDF only

    text = ""
    sections: list[Section] = []
    for number, page in enumerate(page_texts(data, bounds, deadline, normalise), start=1):
        if text:
            text += "\n\n"
        base = len(text)
        text += page
        sections += [
            Section(s.start, s.end, page=number) for s in _paragraphs(text, base, len(text), ())
        ]
    return Parsed("pdf", text, tuple(sections))
