"""A PDF's text, page by page, within the bounds of one parse (`bounds.Bounds`).

A PDF's cost is not its size: a 7.8 KB file of 40 pages sharing one compressed
content stream of 100,000 text operators took 78 s of CPU, each page reading the
whole stream again; one page invoking a form XObject 5,000 times reads that form
5,000 times. So, before any text is read:

- at most `max_pages` pages;
- at most `CONTENT_BYTES_PER_SECOND` x `max_seconds` bytes of page content: each
  page's decoded content streams (a stream 40 pages share counts 40 times) and each
  form XObject they can invoke (once). What could not be read in time is refused at
  once, without reading it.

Then, while pypdf reads the text, the parse's CPU time is checked between pages and
every `CHECK_OPERATORS` content operators, in forms too; the text stops as soon as
it passes `max_chars` characters, after the page that passed them.

pypdf's warnings while it reads a file (a damaged one gave 49,752 log lines) are
not logged one by one: each parse logs one line with their count, on the
`remem.documents` logger. No error a client sees quotes pypdf's classes or
messages.
"""

from __future__ import annotations

import io
import logging
from collections import Counter
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from remem.documents.bounds import Bounds, Deadline, check_length
from remem.errors import InvalidInput
from remem.forksafe import ForkSafeLock

CONTENT_BYTES_PER_SECOND = 2_000_000  # pypdf read about 0.8 MB of content a second here
CHECK_OPERATORS = 256  # content operators between two looks at the clock
MAX_FORMS = 10_000  # distinct form XObjects looked at before any text is read
UNREADABLE = (
    "the PDF could not be read: it is damaged or uses a structure the reader does not "
    "support; save or print it again as a PDF, or add its text instead"
)
log = logging.getLogger("remem.documents")

# the warnings of the parse running in this context (None: no parse)
_TALLY: ContextVar[Counter[str] | None] = ContextVar("remem_pdf_warnings", default=None)
_install_lock = ForkSafeLock()
_installed = False


class _OutOfBounds(BaseException):
    """Carries a bound's InvalidInput out of pypdf, which catches every `Exception`
    around a form XObject it reads (and would read the next one)."""

    def __init__(self, error: InvalidInput) -> None:
        super().__init__(str(error))
        self.error = error


class _Tally(logging.Handler):
    """On the `pypdf` logger, which then no longer propagates: a record logged during
    a parse in this context is counted; any other goes on to the loggers above, as
    propagation would have sent it."""

    def emit(self, record: logging.LogRecord) -> None:
        tally = _TALLY.get()
        if tally is not None:
            tally[record.name] += 1
            return
        parent = logging.getLogger("pypdf").parent
        if parent is not None:
            parent.handle(record)


def _install() -> None:
    global _installed
    with _install_lock:
        if not _installed:
            pypdf_log = logging.getLogger("pypdf")
            pypdf_log.addHandler(_Tally())
            pypdf_log.propagate = False
            _installed = True


def page_texts(
    data: bytes, bounds: Bounds, deadline: Deadline, clean: Callable[[str], str]
) -> list[str]:
    """The text of each page of the PDF `data` as `clean` makes it (the characters'
    bound counts it so), within `bounds`; InvalidInput for a file that cannot be read
    or passes a bound."""
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InvalidInput("reading PDF documents needs pypdf: pip install 'remem[docs]'") from None
    _install()
    tally: Counter[str] = Counter()
    token = _TALLY.set(tally)
    try:
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise InvalidInput(
                    "the PDF is encrypted: decrypt it (or print it to a new PDF) and add it again"
                )
            return _read(reader, bounds, deadline, clean)
        except _OutOfBounds as stop:
            raise stop.error from None
        except (InvalidInput, MemoryError):
            raise
        except Exception:  # a broken file makes pypdf raise many kinds, not only its own
            raise InvalidInput(UNREADABLE) from None
    finally:
        _TALLY.reset(token)
        if tally:
            log.warning(
                "a PDF of %d bytes gave %d reader warnings while its text was read (%s); "
                "not logged one by one",
                len(data),
                tally.total(),
                ", ".join(f"{name}: {n}" for name, n in tally.most_common(3)),
            )


def _read(
    reader: Any, bounds: Bounds, deadline: Deadline, clean: Callable[[str], str]
) -> list[str]:
    pages = reader.pages
    count = len(pages)
    if count > bounds.max_pages:
        raise InvalidInput(
            f"the PDF has {count} pages; the limit is {bounds.max_pages} "
            "(`[documents] max_pages`): nothing was stored; split it into several documents"
        )
    _check_content(pages, count, bounds, deadline)
    where = ""
    operators = 0

    def tick(*_: Any) -> None:  # before each content operator, in forms too
        nonlocal operators
        operators += 1
        if operators % CHECK_OPERATORS == 0 and deadline.spent():
            raise _OutOfBounds(deadline.over(where))

    texts: list[str] = []
    chars = 0
    for number, page in enumerate(pages, start=1):
        where = f"on page {number} of {count}"
        deadline.check(where)
        text = clean(page.extract_text(visitor_operand_before=tick) or "")
        texts.append(text)
        chars += (2 if chars else 0) + len(text)  # as the pages are joined, "\n\n" apart
        check_length(chars, bounds.max_chars, f"by page {number} of {count}")
    return texts


def _check_content(pages: Any, count: int, bounds: Bounds, deadline: Deadline) -> None:
    """InvalidInput when the pages' content (see the module docstring) is over what
    `bounds.max_seconds` can read, without reading any text."""
    limit = int(CONTENT_BYTES_PER_SECOND * bounds.max_seconds)
    total = 0
    forms: set[int] = set()
    for number, page in enumerate(pages, start=1):
        total += _stream_bytes(page.get("/Contents"))
        total += _form_bytes(page.get("/Resources"), forms)
        if total > limit:
            raise InvalidInput(
                f"the PDF's pages hold over {limit} bytes of content by page {number} of "
                f"{count} (a page counts each content stream it shows, shared or not); the "
                f"limit is {CONTENT_BYTES_PER_SECOND} bytes per second of "
                f"`[documents] max_parse_seconds` ({bounds.max_seconds:g}): nothing was "
                "stored; split it into several documents, add its text instead, or raise "
                "the time"
            )
        if number % CHECK_OPERATORS == 0:
            deadline.check(f"by page {number} of {count}, before its text was read")


def _resolved(obj: Any) -> Any:
    return obj.get_object() if obj is not None else None


def _stream_bytes(contents: Any) -> int:
    """The decoded size of a page's `/Contents` (a stream, or an array of them)."""
    from pypdf.generic import ArrayObject, StreamObject

    obj = _resolved(contents)
    size = 0
    for stream in list(obj) if isinstance(obj, ArrayObject) else [obj]:
        stream = _resolved(stream)
        if isinstance(stream, StreamObject):
            size += len(stream.get_data())
    return size


def _form_bytes(resources: Any, seen: set[int]) -> int:
    """The decoded size of the form XObjects `resources` can invoke (and the forms
    those can), each counted the first time any page reaches it."""
    from pypdf.generic import DictionaryObject, StreamObject

    size = 0
    stack = [resources]
    while stack:
        res = _resolved(stack.pop())
        xobjects = _resolved(res.get("/XObject")) if isinstance(res, DictionaryObject) else None
        if not isinstance(xobjects, DictionaryObject):
            continue
        for ref in xobjects.values():
            form = _resolved(ref)
            if not isinstance(form, StreamObject) or form.get("/Subtype") != "/Form":
                continue
            if id(form) in seen:
                continue
            if len(seen) >= MAX_FORMS:
                raise InvalidInput(
                    f"the PDF has over {MAX_FORMS} form XObjects: nothing was stored; "
                    "add its text instead"
                )
            seen.add(id(form))
            size += len(form.get_data())
            stack.append(form.get("/Resources"))
    return size
