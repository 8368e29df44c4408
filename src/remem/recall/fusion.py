"""Fusing word and vector matches into one score per candidate.

A candidate's word evidence is the share of the query's informative words it
holds: each content word of the word query weighs its inverse document
frequency among the returnable candidates (records and raw events together), so
a word most candidates hold counts little and a word only one holds counts
much; a candidate's evidence is the weight of the words it holds over the
weight of all of them (0 to 1). That evidence counts as far as it is
corroborated (`corroboration`): in full when the candidate's meaning agrees
(cosine >= `AGREEING_COSINE`) or it holds most of the query's words
(>= `WORDS_ALONE`), in proportion otherwise. Its cosine with the query is added. A one-word
overlap with a long question therefore stays weak: before, BM25 was divided
by the best returnable BM25, so when nothing shared the question's meaningful
words, a candidate holding only "try" scored a full 1.0 and buried the
semantically right one. Records and raw events are scored the same way, so one
scale orders them, and the bonuses of `remem.recall.query` add to it.

The evidence depends only on the candidates' texts and the query, not on the
backend's word ranking (SQLite's BM25 and PostgreSQL's ts_rank differ in
scale); the backend's word search decides which candidates are found. On the
development sets, pure coverage did best on PrefEval; its geometric mean with
BM25 over the best returnable BM25 did better on LoCoMo (recall@10 0.770
against 0.758 in a harness run) but worse on PrefEval (hit@5 at 50 per actor
0.63 against 0.73), and a 3:1 blend fell between (0.763; 0.70).

Corroboration, on the development sets in a harness run over the same
gathered candidates (hit@1/@5/@10 at 50 per actor; LoCoMo recall@10 1-4 and
adversarial), with repeated texts kept once (`rank`): uncorroborated words
0.339/0.782/0.935, 0.765, 0.713; AGREEING_COSINE 0.3, 0.35, 0.4, 0.45 with
WORDS_ALONE 0.7: see docs/benchmarks.md, "Preference recall", for the table. Scaling every
candidate's words by how well the best one covers the query instead (full at
0.5) reached dense on PrefEval but cost LoCoMo open-domain 0.477 -> 0.403.
"""

from __future__ import annotations

import functools
import math
import re
from collections import defaultdict
from collections.abc import Container, Iterable, Mapping, Sequence

from remem.linger import Sweep
from remem.store.roles import Hit
from remem.store.text import STOPWORDS

# A word match counts in full when the candidate's meaning agrees with the
# query (its cosine reaches `AGREEING_COSINE`) or when it holds most of the
# query's informative words (`WORDS_ALONE` of their weight); otherwise in
# proportion to the nearer of the two (see `fuse`).
AGREEING_COSINE = 0.35
WORDS_ALONE = 0.7

# A candidate found only by its vector must be at least this similar to the
# query: below it, all-MiniLM-L6-v2 pairs are mostly unrelated. Candidates that
# share words with the query are exempt (the relevance floor, `floor.FLOOR`,
# judges them). At 0.25, as before, a tenth of the stated preferences a PrefEval
# request asks for were cut although they were the actor's closest turns.
MIN_VECTOR_ONLY_COSINE = 0.15

# BM25's usual constants, for the length normalisation of a request's word evidence
# (`length_share`).
LENGTH_K1 = 1.2
LENGTH_B = 0.75

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ENDINGS = frozenset("sgde")


def stem(word: str) -> str:
    """A crude stem, so that "tries" matches "try", "painting" "painted", "running" "run"."""
    return _stem(word.lower())


def _stem(w: str) -> str:
    """`stem` of a lower-case word. Every rule strips an ending in s, g, d or e, so a
    word ending otherwise is its own stem (most words: a recall stems about 300)."""
    if w[-1:] not in _ENDINGS:
        return w
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif (len(w) > 5 and w.endswith("ing")) or (len(w) > 4 and w.endswith("ed")):
        w = w[:-3] if w.endswith("ing") else w[:-2]
        if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "lsz":  # running, stopped
            w = w[:-1]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


STEMS_KEPT = 4096
"""Texts whose stems `content_stems` keeps (least recently used dropped first): a
recall reads the stems of each of its 80 or so candidates, mostly the same records
as the recall before (about 0.5 ms of a recall at 100,000 records)."""
STEMS_KEPT_CHARS = 1000
"""The longest text whose stems are kept: a longer one (an event may hold 100,000
characters, 1.3 MB with its stems) is stemmed at each call. Kept texts and their stems
then hold at most about 70 MB (16 KB for 1,000 characters of distinct words).

The kept texts are records' and events' own: an erasure empties them in its process
(`drop_kept_stems`), and every other process empties them every `LINGER_SECONDS`
(`remem.linger`), at its next `word_evidence`."""


def content_stems(text: str, keep_function_words: bool = False) -> frozenset[str]:
    """The stems of a text's words that the word search does not ignore (or all); those
    of a text of at most `STEMS_KEPT_CHARS` characters are kept (`STEMS_KEPT` texts)."""
    if len(text) > STEMS_KEPT_CHARS:
        return _stems(text, keep_function_words)
    return _kept_stems(text, keep_function_words)


def _stems(text: str, keep_function_words: bool) -> frozenset[str]:
    return frozenset(
        _stem(w) for w in _WORD.findall(text.lower()) if keep_function_words or w not in STOPWORDS
    )


_kept_stems = functools.lru_cache(maxsize=STEMS_KEPT)(_stems)
_stems_sweep = Sweep()


def drop_kept_stems() -> None:
    """Forget every text whose stems are kept (after an erasure: the texts may be its)."""
    _kept_stems.cache_clear()


def holds_stems_of(text: str, keep_function_words: bool = False) -> bool:
    """Whether the stems of `text` are kept now (what an erasure's test reads back).
    Asks the cache once, which keeps the text if it was not kept: it is then dropped
    again by emptying the cache."""
    before = _kept_stems.cache_info().hits
    _kept_stems(text, keep_function_words)
    held = _kept_stems.cache_info().hits > before
    if not held:
        _kept_stems.cache_clear()
    return held


def word_evidence(
    words: str,
    texts: Mapping[str, str],
    also: Mapping[str, str] | None = None,
    past_the_first: bool = False,
    by_length: bool = False,
) -> dict[str, float]:
    """The share of the query's informative words each text holds (0 to 1).

    A word's weight is log(1 + (N + 1) / (df + 0.5)), N the texts, df those
    holding it: a query word no text holds still weighs in the denominator,
    so holding one word of a question that asks about three is about a third.
    The texts of `also` are scored on those weights without counting in them.
    With `past_the_first` (a request: see `remem.recall.rank`), the heaviest word
    a text holds does not count, only the others it holds: one shared word is
    no evidence, two are the weight of the lighter one. With `by_length` (a request
    too), a text longer than the texts' mean keeps `length_share` of its evidence.
    """
    if _stems_sweep.due():  # what another process erased goes (`remem.linger`)
        drop_kept_stems()
    every = not content_stems(words)  # nothing but function words: as the word search does
    asked = content_stems(words, every)
    if not asked:
        return {}
    held = {tid: content_stems(text, every) & asked for tid, text in texts.items()}
    df: dict[str, int] = defaultdict(int)
    for stems in held.values():
        for s in stems:
            df[s] += 1
    n = len(texts)
    weight = {s: math.log(1 + (n + 1) / (df[s] + 0.5)) for s in asked}
    total = sum(weight.values())
    held |= {tid: content_stems(text, every) & asked for tid, text in (also or {}).items()}
    sizes = (
        {tid: len(_WORD.findall(t)) for tid, t in (*texts.items(), *(also or {}).items())}
        if by_length
        else {}
    )
    mean = max(1.0, sum(sizes.values()) / len(sizes)) if sizes else 0.0
    out = {}
    weigh = weight.__getitem__
    for tid, stems in held.items():
        held_weight = sum(map(weigh, stems))
        if past_the_first and stems:
            held_weight -= max(map(weigh, stems))
        if held_weight > 0:
            out[tid] = held_weight / total * (length_share(sizes[tid], mean) if mean else 1.0)
    return out


def length_share(size: int, mean: float) -> float:
    """What a text of `size` words keeps of its word evidence among texts of `mean` size:
    BM25's length normalisation of a word held once, (k1 + 1) / (1 + k1 (1 - b + b
    size / mean)) with its usual k1 = `LENGTH_K1`, b = `LENGTH_B` (as the baselines'
    BM25), at most 1. A text of the mean size or shorter keeps all; twice the mean,
    0.71; seven times, 0.25.

    A long text holds some of a request's words by its length alone: a pasted
    270-word paper abstract held "make", "new", "programming" and "language" of "How
    can I make learning a new programming language more engaging?" and stood, with the
    turn beside it, above "I strongly dislike gamified learning approaches" (PrefEval,
    50 per actor; dense put that first, as its one vector dilutes a long text).
    Runs in docs/decisions/prefeval-topics.md.
    """
    return min(1.0, (LENGTH_K1 + 1) / (1 + LENGTH_K1 * (1 - LENGTH_B + LENGTH_B * size / mean)))


def without_asking(words: str, asking: Container[str]) -> str:
    """`words` (a request's word query) without the words it asks with (`asking`:
    `remem.policy.applies.asking_words`), or `words` itself when no content word would
    be left.

    They say that something is asked for, not what, and the memories of a person who
    asks for things hold them too: "Does not like flea treatments on their pets" held
    "like" of "good first pets for a young family like ours" beside "pets", and outranked
    "Is allergic to pet dander" (PrefEval, 50 per actor, where dense put that first).
    """
    kept = " ".join(w for w in _WORD.findall(words.lower()) if w not in asking)
    return kept if content_stems(kept) else words


def named_fields(words: str, names: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """id -> the names of its field the query says, for each record whose field (one
    fact's: `remem.policy.fields.field_names`) the query names.

    A question about a fact says its field ("Which city is my home?", "What is my
    job?" of a `role`), while the record's text holds the value ("Moved to
    Lisbon", "Works night shifts at the hospital"): the word search, which reads
    texts, cannot find it. A one-word name is said when its stem is among the
    query's content words; a longer one ("lives in", "date of birth") when the
    query says it whole, so "what do I do for a living?" does not name `home
    city` through "lives in".
    """
    asked = content_stems(words)
    if not asked:
        return {}
    said = " ".join(_WORD.findall(words.lower()))
    out: dict[str, str] = {}
    for rid, of_field in names.items():
        hit = [n for n in of_field if (f" {n} " in f" {said} " if " " in n else stem(n) in asked)]
        if hit:
            out[rid] = " ".join(hit)
    return out


def without_weak_vectors(
    lexical: list[Hit],
    vector: list[tuple[str, float]],
    rejected: dict[str, str],
    least: float = MIN_VECTOR_ONLY_COSINE,
) -> list[tuple[str, float]]:
    """The vector hits worth keeping: those below `least` are dropped unless they share
    words too."""
    words = {h.id for h in lexical}
    kept = []
    for rid, cosine in vector:
        if rid not in words and cosine < least:
            rejected[rid] = f"weak match (cosine {cosine:.2f})"
        else:
            kept.append((rid, cosine))
    return kept


def candidate_ids(lexical: list[Hit], vector: list[tuple[str, float]]) -> list[str]:
    """Candidate ids, word matches first, each once."""
    return list(dict.fromkeys([h.id for h in lexical] + [rid for rid, _ in vector]))


def fuse(
    lexical: Iterable[Hit],
    vector: list[tuple[str, float]],
    evidence: Mapping[str, float],
    returnable: Container[str],
    also: Container[str] = (),
) -> dict[str, float]:
    """Word evidence, as far as it is corroborated, plus cosine for each returnable id.

    `evidence` is `word_evidence` of the gathered texts; only ids the word
    search found get theirs, and only as much of it as `corroboration` allows.
    The ids in `also` (superseded records whose successor may inherit their
    match) are scored the same way. An id in neither list gets no score.
    """
    cosines = dict(vector)
    # a word match the vector search did not find is less similar than all it found
    below = min(cosines.values()) if cosines else None
    scores: dict[str, float] = defaultdict(float)
    for h in lexical:
        if h.id in returnable or h.id in also:
            words = evidence.get(h.id, 0.0)
            scores[h.id] = words * corroboration(words, cosines.get(h.id, below))
    for rid, cosine in vector:
        if rid in returnable or rid in also:
            scores[rid] += max(cosine, 0.0)
    return dict(scores)


def corroboration(words: float, cosine: float | None) -> float:
    """How much of a candidate's word evidence counts (0 to 1).

    In full when its cosine reaches `AGREEING_COSINE` or it holds `WORDS_ALONE`
    of the query's word weight; else the larger of cosine / `AGREEING_COSINE`
    and words / `WORDS_ALONE`. Without cosines (no embedder) words count in full.

    A long request shares a generic word or two with many turns ("What
    activities would you suggest?"); counted in full, those words lifted turns
    unrelated in meaning above the stated preference, which shares none of
    them, and remem fell below its own dense component. A turn that holds
    most of a question's words, or that also means much the same, keeps them.
    """
    if cosine is None:
        return 1.0
    return min(1.0, max(max(cosine, 0.0) / AGREEING_COSINE, words / WORDS_ALONE))
