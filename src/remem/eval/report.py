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
