"""Questions about the asker: "What do I do for a living?", "Who am I living with?".

A memory is about its actor, so a question asking for a fact about the actor
("What's my line of work?", "Which team do I follow?", "Do I have any pets?")
is answered by something in it whenever anything was said, even when the
answer shares no word and little meaning with the question: all-MiniLM-L6-v2
puts "What do I do for a living?" at cosine 0.00 with "I translate Dutch to
English legal contracts". For such a question the relevance floor may trim a
packet but not leave it nearly empty (`remem.recall.engine`).

In English a question asks for a fact about the asker when it is a question
(a question mark, or it opens with a question word or an auxiliary), names the
asker (I, me, my, mine, we, us, our) and holds no modal of advice (should,
could, can, would, shall, must, ought, might): "What should I do about a slow
drain?" and "Can I get my money back?" ask for advice or knowledge, not for a
fact about the asker. "How do I ..." asks for a method ("How do I convert a
PDF?"), so it is not one either. A request that names the asker ("My
birthday's next month, any ideas for a night out?") is one: what the person
said about themselves bears on it.
"""

from __future__ import annotations

import re

_ASKER = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|we|we're|we've|us|our|ours)\b")
_MODAL = re.compile(
    r"\b(?:should|shall|could|can|would|must|ought|might|may|can't|cannot|couldn't|"
    r"shouldn't|wouldn't)\b"
)
_REMIND = re.compile(r"\bremind\s+me\b")
_METHOD = re.compile(r"\bhow\s+(?:do|does|did|to)\b")
_OPENS = re.compile(
    r"^\s*(?:who|whom|whose|what|what's|whats|which|where|where's|when|when's|why|how|"
    r"do|does|did|am|is|are|was|were|have|has|had|remind\s+me)\b"
)


def about_asker(text: str) -> bool:
    """Whether `text` asks for a fact about the asker (see the module's rule)."""
    low = text.replace("\u2019", "'").lower().strip()
    if not (low.endswith("?") or _OPENS.search(low)):
        return False
    if _ASKER.search(_REMIND.sub("", low)) is None:  # "remind me" names no fact of mine
        return False
    return _MODAL.search(low) is None and _METHOD.search(low) is None
