"""What every detector shares: the hit and span shapes, and the regular-expression
fragments labels are written with."""

from __future__ import annotations

import re
from collections.abc import Callable

Hit = tuple[str, int, int]  # (kind, start, end): text[start:end] is the secret

Span = tuple[int, int]
ValueFn = Callable[[str, int], Span | None]

IGNORECASE = re.IGNORECASE
WORD_START = r"(?<![A-Za-z0-9])"  # labels may follow "_": OPENAI_API_KEY, DB_PASSWORD
TOKEN_START = r"(?<![A-Za-z0-9_])"
TOKEN_END = r"(?![A-Za-z0-9_])"
# "password: x", "password = x", "password is x", "passwords were: x", '"password": "x"'
SEP = r"""["']?(?:\s*[:=]\s*|\s+(?:is|was|are|were)\b\s*:?\s*)"""
# "password for gmail is", "password to the wifi is", "api key for my work account:"
FOR = r"(?:\s+(?:for|to|on|at|of)\s+[\w.@'-]+(?:\s+[\w.@'-]+){0,2}?)?"
# "passport number x", "passport no. is x", "passport # x", "passport: x"
ID_SEP = rf"(?:(?:\s+(?:number|no\.?|num|id)|\s*#)(?:{SEP}|\s*)|{SEP})"
