"""A document's text and its structure: plain text, Markdown, HTML and PDF.

Every format becomes one *normalised text* (Unicode NFC, line ends `\\n`, no
NUL, trailing spaces cut) and a list of `Section`s: each a span of that text
(`start`, `end` are character offsets, `text[start:end]` is the section) with
its position, the heading path above it or the page it is on. Chunks are cut
from sections (`remem.documents.chunk`), so a chunk's span is an exact span of
the normalised text and can be shown, quoted or checked against the source.

Pure functions; PDF text comes from pypdf (`pip install 'remem[docs]'`), HTML
from the standard library's `html.parser`. No network, ever.
"""

from __future__ import annotations

import io
import re
import unicodedata
from dataclasses import dataclass
from html.parser import HTMLParser

from remem.errors import InvalidInput
from remem.policy.dataclasses import shown

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
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
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
    text = text.replace("\x00", "")
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")


def parse(data: bytes | str, fmt: str) -> Parsed:
    """`data` (bytes of a file, or text) in format `fmt` as normalised text and sections."""
    if fmt == "pdf":
        if isinstance(data, str):
            raise InvalidInput("a PDF document must be given as bytes, not text")
        return _pdf(data)
    text = data if isinstance(data, str) else _decode(data)
    if fmt == "html":
        return _html(text)
    if fmt == "markdown":
        return _markdown(normalise(text))
    return Parsed("text", (t := normalise(text)), tuple(_paragraphs(t, 0, len(t), ())))


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


def _markdown(text: str) -> Parsed:
    """Sections under each heading path; a heading line itself is no section."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    body = 0
    offset = 0
    in_fence = False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        m = None if in_fence else _HEADING.match(line)
        if m is not None:
            sections += _paragraphs(text, body, offset, tuple(t for _, t in path))
            level = len(m.group(1))
            heading = m.group(2).strip()[:MAX_HEADING_CHARS]
            path = [(lv, t) for lv, t in path if lv < level] + [(level, heading)]
            body = offset + len(line) + 1
        offset += len(line) + 1
    sections += _paragraphs(text, body, len(text), tuple(t for _, t in path))
    return Parsed("markdown", text, tuple(sections))


_BLOCKS = {"p", "div", "li", "pre", "blockquote", "td", "th", "tr", "section", "article", "br"}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SKIP = {"script", "style", "head", "title", "noscript", "template"}


class _HTMLText(HTMLParser):
    """Text of an HTML page as Markdown-like lines: headings become `#` lines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS or tag in _BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(re.sub(r"\s+", " ", data))


def _html(source: str) -> Parsed:
    parser = _HTMLText()
    parser.feed(source)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    parsed = _markdown(normalise("\n".join(lines)))
    return Parsed("html", parsed.text, parsed.sections)


def _pdf(data: bytes) -> Parsed:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InvalidInput("reading PDF documents needs pypdf: pip install 'remem[docs]'") from None
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [normalise(page.extract_text() or "") for page in reader.pages]
    except MemoryError:
        raise
    except Exception as exc:  # a broken file makes pypdf raise many kinds, not only its own
        said = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise InvalidInput(
            f"the PDF could not be read ({type(exc).__name__}{': ' + said if said else ''})"
        ) from None
    text = ""
    sections: list[Section] = []
    for number, page in enumerate(pages, start=1):
        if text:
            text += "\n\n"
        base = len(text)
        text += page
        sections += [
            Section(s.start, s.end, page=number) for s in _paragraphs(text, base, len(text), ())
        ]
    return Parsed("pdf", text, tuple(sections))
