"""The report of an eval run: tables on the terminal and a PNG chart.

The JSON document is the run's result itself (`remem.eval.runner.run`); this
module only renders it. matplotlib is optional: without it the chart is
skipped with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from remem.eval.metrics import category_name

CATEGORY_ORDER = ("1", "2", "3", "4", "overall", "5")


def _fmt(value: object, digits: int = 2) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "-" if value is None else str(value)


SHORT = {"1": "multi-hop", "2": "temporal", "3": "open-dom.", "4": "single-hop",
         "overall": "overall", "5": "advers."}  # fmt: skip


def recall_table(result: dict[str, Any]) -> Table:
    """Evidence recall@k per system, k and category, with all-evidence hit@k overall."""
    ks: Sequence[int] = result["ks"]
    table = Table(
        title="Evidence recall@k by category (overall: 1-4; adversarial apart)",
        title_justify="left",
    )
    table.add_column("system", no_wrap=True)
    table.add_column("k", justify="right")
    first: dict[str, Any] = next(iter(result["systems"].values()), {"categories": {}})
    cats = [c for c in CATEGORY_ORDER if c in first["categories"]]
    for cat in cats:
        n = first["categories"][cat].get("questions", 0)
        table.add_column(f"{SHORT.get(cat, cat)}\n{n} q", justify="right")
    table.add_column("hit\n1-4", justify="right")
    for name, fig in result["systems"].items():
        for i, k in enumerate(ks):
            row = [name if i == 0 else "", str(k)]
            for cat in cats:
                row.append(_fmt(fig["categories"][cat].get(f"recall@{k}")))
            row.append(_fmt(fig["categories"]["overall"].get(f"hit@{k}")))
            table.add_row(*row, end_section=i == len(ks) - 1)
    return table


def summary_table(result: dict[str, Any]) -> Table:
    """One row per system: recall within the budget (1-4), its cost, and speed."""
    budget = result["budget"]
    table = Table(title=f"Within {budget} tokens (1-4), cost and speed", title_justify="left")
    table.add_column("system", no_wrap=True)
    for head in ("recall", "hit", "tokens", "compr.", "ingest s", "p50 ms", "p95 ms"):
        table.add_column(head, justify="right")
    for name, fig in result["systems"].items():
        o = fig["categories"]["overall"]
        table.add_row(
            name,
            _fmt(o.get("budget_recall")),
            _fmt(o.get("budget_hit")),
            _fmt(o.get("budget_tokens"), 0),
            _fmt(o.get("compression"), 3),
            _fmt(fig["ingest_seconds"], 1),
            _fmt(fig["latency"]["p50_ms"], 1),
            _fmt(fig["latency"]["p95_ms"], 1),
        )
    return table


def answers_table(result: dict[str, Any]) -> Table | None:
    """Judged answer accuracy per category beside compression, for systems that answered."""
    rows = {n: f for n, f in result["systems"].items() if "answers" in f}
    if not rows:
        return None
    table = Table(
        title="Answers judged correct, from the packet within the budget (overall: 1-4)",
        title_justify="left",
    )
    table.add_column("system", no_wrap=True)
    first = next(iter(rows.values()))["answers"]
    cats = [c for c in CATEGORY_ORDER if c in first]
    for cat in cats:
        table.add_column(f"{SHORT.get(cat, cat)}\n{first[cat]['questions']} q", justify="right")
    table.add_column("compr.\n1-4", justify="right")
    for name, fig in rows.items():
        cells = [_fmt(fig["answers"][cat]["accuracy"]) for cat in cats]
        compression = fig["categories"]["overall"].get("compression")
        table.add_row(name, *cells, _fmt(compression, 3))
    return table


def print_report(result: dict[str, Any], console: Console) -> None:
    """The tables, then what loading skipped and any notes."""
    data = result["dataset"]
    console.print(
        f"{data['conversations']} conversations, {data['turns']} turns, "
        f"{data['questions']} questions; budget {result['budget']} tokens"
    )
    console.print(recall_table(result))
    console.print(summary_table(result))
    answers = answers_table(result)
    if answers is not None:
        console.print(answers)
    if "packets" in result:
        on, off = result["packets"]["on_topic"], result["packets"]["off_topic"]
        console.print(
            f"remem packets at k={result['packets']['k']}: {on['mean_items']:.2f} items / "
            f"{on['mean_tokens']:.0f} tokens on topic, {off['mean_items']:.2f} items / "
            f"{off['mean_tokens']:.0f} tokens off topic (asked of another conversation)"
        )
    quality = result.get("extraction", {})
    if "records_per_100_turns" in quality:
        share = quality["speaker_named_share"]
        console.print(
            f"extraction: {quality['records']} records, {quality['records_per_100_turns']:.1f} "
            f"per 100 turns; {_fmt(share)} of the {quality['from_named_speaker']} made from a "
            f"named speaker's turn name that speaker; {quality['flagged_words']} with a word "
            f"in neither their turns nor the word list; {quality['cut_ends']} ending "
            "unfinished"
        )
    skipped = data["skipped"]
    if skipped["malformed_evidence"] or skipped["missing_evidence"]:
        console.print(
            f"evidence skipped: {skipped['malformed_evidence']} malformed "
            f"{skipped['malformed_examples']}, {skipped['missing_evidence']} pointing at no "
            f"turn {skipped['missing_examples']}"
        )
    for note in result.get("notes", []):
        console.print(f"note: {note}")


def write_chart(result: dict[str, Any], path: Path) -> str | None:
    """Draw recall@k by category, one panel per k, to a PNG; a note when it cannot."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no chart was drawn"
    ks: Sequence[int] = result["ks"]
    systems = list(result["systems"])
    first = result["systems"][systems[0]]["categories"] if systems else {}
    cats = [c for c in CATEGORY_ORDER if c in first]
    width = 0.8 / max(1, len(systems))
    fig, axes = plt.subplots(1, len(ks), figsize=(4.5 * len(ks), 4.2), sharey=True, squeeze=False)
    for ax, k in zip(axes[0], ks, strict=True):
        for i, name in enumerate(systems):
            cat_figs = result["systems"][name]["categories"]
            values = [float(cat_figs[c].get(f"recall@{k}", 0.0)) for c in cats]
            xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(cats))]
            ax.bar(xs, values, width, label=name)
        ax.set_title(f"evidence recall@{k}")
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels([category_name(c).replace(" (1-4)", "\n(1-4)") for c in cats],
                           rotation=30, ha="right", fontsize=8)  # fmt: skip
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    columns = min(5, max(1, len(systems)))
    rows = -(-len(systems) // columns)
    fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0.0, 0.05 * rows + 0.02, 1.0, 1.0))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def prefeval_tables(result: dict[str, Any]) -> list[Table]:
    """For each actor size: hit@k per system, then hit@k per topic at the middle k."""
    ks: Sequence[int] = result["ks"]
    mid = ks[len(ks) // 2]
    out = []
    for size, fig in result["sizes"].items():
        table = Table(
            title=f"{size} preferences per actor: {fig['actors']} actors, "
            f"{fig['questions']} questions",
            title_justify="left",
        )
        table.add_column("system", no_wrap=True)
        for k in ks:
            table.add_column(f"hit@{k}", justify="right")
        for head in ("ingest s", "p50 ms", "p95 ms"):
            table.add_column(head, justify="right")
        for name, sys_fig in fig["systems"].items():
            table.add_row(
                name,
                *(_fmt(sys_fig["overall"].get(f"hit@{k}")) for k in ks),
                _fmt(sys_fig["ingest_seconds"], 1),
                _fmt(sys_fig["latency"]["p50_ms"], 1),
                _fmt(sys_fig["latency"]["p95_ms"], 1),
            )
        out.append(table)
        topics = Table(title=f"hit@{mid} per topic, {size} per actor", title_justify="left")
        topics.add_column("topic", no_wrap=True)
        topics.add_column("q", justify="right")
        for name in fig["systems"]:
            topics.add_column(name, justify="right")
        for row in prefeval_topic_rows(fig, mid):
            topics.add_row(*row)
        out.append(topics)
    return out


def prefeval_topic_rows(size_fig: dict[str, Any], k: int) -> list[list[str]]:
    """Rows of topic, questions, then hit@k of every system, for one actor size."""
    systems = size_fig["systems"]
    first = next(iter(systems.values()))
    rows = []
    for topic, topic_fig in first["topics"].items():
        cells = [_fmt(s["topics"][topic].get(f"hit@{k}")) for s in systems.values()]
        rows.append([topic, str(topic_fig["questions"]), *cells])
    return rows


def print_prefeval(result: dict[str, Any], console: Console) -> None:
    """The PrefEval tables, then packet sizes and write quality per actor size, and notes."""
    data = result["dataset"]
    console.print(
        f"{data['preferences']} preferences in {len(data['topics'])} topics, "
        f"{data['distractor_user_turns']} distractor user turns; seed {result['config']['seed']}"
    )
    for table in prefeval_tables(result):
        console.print(table)
    for size, fig in result["sizes"].items():
        on, off = fig["packets"]["on_topic"], fig["packets"]["off_topic"]
        q = fig["write_quality"]
        off_text = (
            f"{off['mean_items']:.2f} items / {off['mean_tokens']:.0f} tokens off topic "
            f"({off['questions']} questions)"
            if off["questions"]
            else "no off-topic questions (the actors state every topic)"
        )
        console.print(
            f"{size} per actor: remem packets {on['mean_items']:.2f} items / "
            f"{on['mean_tokens']:.0f} tokens on topic, {off_text}"
        )
        console.print(
            f"{size} per actor: {q['statement_share']:.3f} of {q['statements']} statements "
            f"yield a record; {q['records_per_100_distractor_turns']:.1f} records per 100 "
            f"distractor turns; {q['flagged_words']} of {q['records']} records have a word in "
            f"neither their turns nor the word list, {q['cut_ends']} end unfinished"
        )
        for ex in q["flagged_examples"][:5]:
            console.print(f"  flagged {ex['words']}: {ex['text']}")
    for note in result.get("notes", []):
        console.print(f"note: {note}")


def write_prefeval_chart(result: dict[str, Any], path: Path) -> str | None:
    """Draw hit@k per system, one panel per actor size, to a PNG; a note when it cannot."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no chart was drawn"
    ks: Sequence[int] = result["ks"]
    sizes = list(result["sizes"])
    fig, axes = plt.subplots(
        1, len(sizes), figsize=(4.5 * len(sizes), 4.2), sharey=True, squeeze=False
    )
    for ax, size in zip(axes[0], sizes, strict=True):
        systems = result["sizes"][size]["systems"]
        width = 0.8 / max(1, len(systems))
        for i, (name, sys_fig) in enumerate(systems.items()):
            values = [float(sys_fig["overall"].get(f"hit@{k}", 0.0)) for k in ks]
            xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(ks))]
            ax.bar(xs, values, width, label=name)
        ax.set_title(f"hit@k, {size} preferences per actor")
        ax.set_xticks(range(len(ks)))
        ax.set_xticklabels([f"k={k}" for k in ks])
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(5, max(1, len(labels))),
               fontsize=8, frameon=False)  # fmt: skip
    fig.tight_layout(rect=(0.0, 0.08, 1.0, 1.0))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


EVERYDAY_TYPES = ("applies", "direct", "current", "episode")


def everyday_tables(result: dict[str, Any]) -> list[Table]:
    """Hit rate per question type and system; then each system's packets and costs."""
    systems = result["systems"]
    first = next(iter(systems.values()))
    hits = Table(
        title=f"Hit rate (every 'must' group in the packet), k={result['k']}, "
        f"budget {result['budget']}",
        title_justify="left",
    )
    hits.add_column("system", no_wrap=True)
    for t in EVERYDAY_TYPES:
        hits.add_column(f"{t}\n{first['types'][t]['questions']} q", justify="right")
    hits.add_column(f"answerable\n{first['answerable']['questions']} q", justify="right")
    hits.add_column("coverage", justify="right")
    hits.add_column("current\nok", justify="right")
    for name, fig in systems.items():
        hits.add_row(
            name,
            *(_fmt(fig["types"][t].get("hit")) for t in EVERYDAY_TYPES),
            _fmt(fig["answerable"].get("hit")),
            _fmt(fig["answerable"].get("coverage")),
            _fmt(fig["types"]["current"].get("current_ok")),
        )
    packets = Table(title="Packets", title_justify="left")
    packets.add_column("system", no_wrap=True)
    for head in ("items", "tokens", "empty\nanswerable", "off-topic\nitems",
                 "filler per\n100 packets", "p50 ms", "p95 ms"):  # fmt: skip
        packets.add_column(head, justify="right")
    for name, fig in systems.items():
        packets.add_row(
            name,
            _fmt(fig["answerable"].get("mean_items")),
            _fmt(fig["answerable"].get("mean_tokens"), 0),
            _fmt(fig["answerable"].get("empty")),
            _fmt(fig["types"]["offtopic"].get("mean_items")),
            _fmt(fig["all"].get("filler_per_100"), 1),
            _fmt(fig["latency"]["p50_ms"], 1),
            _fmt(fig["latency"]["p95_ms"], 1),
        )
    return [hits, packets]


def print_everyday(result: dict[str, Any], console: Console) -> None:
    """The everyday tables, remem's misses, and any notes."""
    data = result["dataset"]
    console.print(
        f"{data['name']}: {data['personas']} personas, {data['turns']} turns "
        f"({data['filler_turns']} filler), {data['questions']} questions"
    )
    for table in everyday_tables(result):
        console.print(table)
    remem = result["systems"].get("remem")
    if remem and remem["misses"]:
        console.print(f"remem missed: {', '.join(remem['misses'])}")
    if remem and remem["empty"]:
        console.print(f"remem empty packets (answerable): {', '.join(remem['empty'])}")
    for note in result.get("notes", []):
        console.print(f"note: {note}")


def write_everyday_chart(result: dict[str, Any], path: Path) -> str | None:
    """Draw hit rate per question type, one bar per system, to a PNG; a note when it cannot."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install matplotlib): no chart was drawn"
    systems = result["systems"]
    groups = [*EVERYDAY_TYPES, "answerable"]
    width = 0.8 / max(1, len(systems))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for i, (name, sys_fig) in enumerate(systems.items()):
        per = [sys_fig["types"][t] for t in EVERYDAY_TYPES] + [sys_fig["answerable"]]
        values = [float(f.get("hit", 0.0)) for f in per]
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(groups))]
        ax.bar(xs, values, width, label=name)
    ax.set_title(f"everyday hit rate, k={result['k']}, budget {result['budget']}")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylim(0, 1)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
