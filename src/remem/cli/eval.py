"""`remem eval ...`: memory quality on benchmarks, from the command line.

`eval_group` is registered by `remem.cli.main`; its commands share the root's
context, `--json` and output through `remem.cli.kit`.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from remem.cli.kit import Ctx, emit, json_option
from remem.embed.base import Embedder, default_embedder
from remem.embed.choose import BUILTINS
from remem.errors import InvalidInput

if TYPE_CHECKING:
    from remem.eval.answers import AnswerJudge

EMBEDDERS = BUILTINS


def parse_ks(text: str, option: str = "--k") -> list[int]:
    """ "5,10,20" -> [5, 10, 20]; InvalidInput for anything else."""
    try:
        ks = sorted({int(p) for p in text.replace(" ", "").split(",") if p})
    except ValueError:
        raise InvalidInput(
            f"{option} takes comma-separated integers such as 5,10,20; got {text!r}"
        ) from None
    if not ks or ks[0] < 1 or ks[-1] > 1000:
        raise InvalidInput(f"{option} values must lie between 1 and 1000; got {text!r}")
    return ks


def pick_embedder(name: str) -> Embedder | None:
    """The embedder named on the command line (None: lexical only): a built-in name
    (`EMBEDDERS`), a folder holding a sentence-transformers model, or an embeddings
    server's URL with its settings in the fragment (`remem.embed.choose`)."""
    from remem.embed.base import DefaultEmbedder
    from remem.embed.choose import resolve_embedder

    chosen = resolve_embedder(name)
    close = getattr(chosen, "close", None)  # an embeddings server's connections
    context = click.get_current_context(silent=True)
    if callable(close) and context is not None:
        context.call_on_close(close)  # when the command ends, not to the garbage collector
    return default_embedder() if isinstance(chosen, DefaultEmbedder) else chosen


EMBEDDER_HELP = (
    "default: the best installed MiniLM; minilm: float32; minilm-int8: remem[embed]'s "
    "int8; hash: a test double; none; or a folder holding a sentence-transformers model; "
    "or an embeddings server, e.g. http://localhost:11434/v1#model=nomic-embed-text"
    "&dimensions=768 (api_key_env=VAR names the key's variable)."
)


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Progress bars on stderr, or a hook that does nothing."""
    if not enabled:
        yield lambda _label, _total: lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:

        def task(label: str, total: int) -> Callable[[int], None]:
            tid = bar.add_task(label, total=total)
            return lambda n: bar.advance(tid, n)

        yield task


def run_locomo(
    path: Path,
    *,
    ks: list[int],
    budget: int,
    mode: str,
    baselines: bool,
    limit_questions: int | None,
    embedder: Embedder | None,
    progress: bool,
    judge: AnswerJudge | None = None,
) -> dict[str, Any]:
    """Load a LoCoMo-format file, run remem (and baselines) on it; the result document."""
    from remem.eval.baselines import baselines as make_baselines
    from remem.eval.locomo import load
    from remem.eval.runner import RememBackend, RememSystem, System, packets, run, write_quality

    data = load(path)
    notes = []
    if embedder is None:
        notes.append("no embedder: remem recall is lexical only and dense baselines are skipped")
    with tempfile.TemporaryDirectory(prefix="remem-eval-") as tmp:
        backend = RememBackend(Path(tmp) / "eval.db", embedder, process=mode != "events")
        try:
            systems: list[System] = [RememSystem(backend, mode)]
            if baselines:
                systems.extend(make_baselines(embedder))
            with _progress(progress) as hook:
                result = run(
                    data, systems, ks=ks, budget=budget, limit_questions=limit_questions,
                    progress=hook, judge=judge,
                )  # fmt: skip
                result["packets"] = packets(
                    backend, data, budget=budget, limit_questions=limit_questions, progress=hook
                )
            quality = write_quality(backend, data) if backend.process else None
        finally:
            backend.close()
    extracted: dict[str, int] = {}
    for counts in backend.processed.values():
        for key, n in counts.items():
            extracted[key] = extracted.get(key, 0) + n
    result["config"] = {
        "file": str(path),
        "mode": mode,
        "embedder": embedder.name if embedder is not None else None,
        "roles": backend.roles,
        "limit_questions": limit_questions,
    }
    if judge is not None:
        usage = judge.calls
        result["config"]["answer_model"] = judge.chat.settings.model
        result["config"]["answer_calls"] = len(usage)
        result["config"]["answer_tokens"] = sum(
            c.prompt_tokens + c.completion_tokens for c in usage
        )
    if extracted:
        result["extraction"] = extracted
    if quality is not None:
        result.setdefault("extraction", {}).update(quality)
    result["notes"] = notes
    return result


@click.group("eval")
def eval_group() -> None:
    """Measure memory quality on benchmarks (retrieval of the evidence)."""


@eval_group.command("locomo")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--k", "k_text", default="5,10,20", show_default=True,
              help="Cut-offs for evidence recall@k, comma-separated.")  # fmt: skip
@click.option("--budget", default=1000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="Token budget for recall-within-budget and compression.")  # fmt: skip
@click.option("--mode", default="both", show_default=True,
              type=click.Choice(["events", "records", "both"]),
              help="events: raw events, no extraction; records: extracted records only; "
              "both: the normal packet.")  # fmt: skip
@click.option("--baselines", is_flag=True,
              help="Also run BM25, dense and their RRF over raw turns.")  # fmt: skip
@click.option("--limit-questions", type=click.IntRange(1, None), default=None,
              help="Ask only the first N questions of each conversation.")  # fmt: skip
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a chart of recall@k by category (needs matplotlib).")  # fmt: skip
@click.option("--embedder", "embedder_name", default="default", show_default=True,
              metavar="NAME|PATH|URL", help=EMBEDDER_HELP)  # fmt: skip
@click.option("--answers", is_flag=True,
              help="Also answer each question from remem's packet within the budget and "
              "judge it against the gold answer, with the configured language model "
              "(--config or REMEM_LLM_*).")  # fmt: skip
@json_option
@click.pass_obj
def locomo(
    ctx: Ctx,
    path: Path,
    k_text: str,
    budget: int,
    mode: str,
    baselines: bool,
    limit_questions: int | None,
    png: Path | None,
    embedder_name: str,
    answers: bool,
) -> None:
    """Evidence recall of a LoCoMo-format file, in a temporary database.

    Each conversation becomes one actor's events (session dates kept, one
    event per turn); extraction runs unless --mode events; every question
    is asked of its own conversation only.
    """
    judge = None
    if answers:
        from remem.config.config import load_config
        from remem.eval.answers import AnswerJudge
        from remem.llm.client import ChatModel

        config = load_config(ctx.config)
        if config.llm is None:
            raise InvalidInput(
                "--answers needs a language model: set [llm] in --config, or "
                "REMEM_LLM_BASE_URL and REMEM_LLM_MODEL"
            )
        judge = AnswerJudge(ChatModel(config.llm, config.retry))
    try:
        result = run_locomo(
            path,
            ks=parse_ks(k_text),
            budget=budget,
            mode=mode,
            baselines=baselines,
            limit_questions=limit_questions,
            embedder=pick_embedder(embedder_name),
            progress=not ctx.as_json,
            judge=judge,
        )
    finally:
        if judge is not None:
            judge.chat.close()
    from remem.eval.report import print_report, write_chart

    _report(ctx, result, png, write_chart, print_report)


@eval_group.command("prefeval")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--per-actor", "sizes_text", default="10,50", show_default=True,
              help="How many preferences one actor states; sizes comma-separated.")  # fmt: skip
@click.option("--k", "k_text", default="1,5,10", show_default=True,
              help="Cut-offs for hit@k, comma-separated.")  # fmt: skip
@click.option("--baselines", is_flag=True,
              help="Also run BM25, dense and their RRF over the raw turns.")  # fmt: skip
@click.option("--embedder", "embedder_name", default="default", show_default=True,
              metavar="NAME|PATH|URL", help=EMBEDDER_HELP)  # fmt: skip
@click.option("--limit-questions", type=click.IntRange(1, None), default=None,
              help="Ask only the questions of each actor's first N preferences "
              "(and as many off-topic ones).")  # fmt: skip
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of dealing, distractor draws and off-topic sample.")  # fmt: skip
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a chart of hit@k per actor size (needs matplotlib).")  # fmt: skip
@json_option
@click.pass_obj
def prefeval(
    ctx: Ctx,
    path: Path,
    sizes_text: str,
    k_text: str,
    baselines: bool,
    embedder_name: str,
    limit_questions: int | None,
    seed: int,
    png: Path | None,
) -> None:
    """Preference recall of a PrefEval-shaped file, in temporary databases.

    For each actor size the preferences are dealt (seeded) into actors; each
    preference is stated in its own session after 3 distractor user turns;
    extraction runs; each preference's question is asked of its actor (a hit:
    the statement, or a record made from it, in the top k), and as many
    questions of topics the actor never stated (packet size). Also reports
    what extraction wrote: statements that yielded a record, records per 100
    distractor turns, records with a word in neither their turns nor the
    word list.
    """
    from remem.eval.prefeval import run

    sizes = parse_ks(sizes_text, "--per-actor")
    ks = parse_ks(k_text)
    embedder = pick_embedder(embedder_name)
    with _progress(not ctx.as_json) as hook:
        result = run(
            path, per_actor=sizes, ks=ks, seed=seed, embedder=embedder,
            with_baselines=baselines, limit_questions=limit_questions, progress=hook,
        )  # fmt: skip
    from remem.eval.report import print_prefeval, write_prefeval_chart

    _report(ctx, result, png, write_prefeval_chart, print_prefeval)


@eval_group.command("governance")
@click.option(
    "--embedder",
    "embedder_name",
    default="default",
    show_default=True,
    type=click.Choice(["default", "hash", "none"]),
    help="The embedder the scenarios run with.",
)
@json_option
@click.pass_obj
def governance(ctx: Ctx, embedder_name: str) -> None:
    """Run the governance scenarios (writes, retrieval, contradictions, isolation,
    staleness, deletion, adversarial input) on fresh databases and report each."""
    from remem.eval.governance import run_governance

    report = run_governance(pick_embedder(embedder_name))

    def human() -> None:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="remem eval governance")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for name, value in report["metrics"].items():
            table.add_row(name, f"{value:.3f}")
        Console().print(table)
        for s in report["scenarios"]:
            detail = {k: v for k, v in s.items() if k not in ("name", "passed")}
            click.echo(f"{'PASS' if s['passed'] else 'FAIL'}  {s['name']:<24} {detail}")
        click.echo(f"{report['passed']}/{report['total']} passed in {report['seconds']} s")

    emit(ctx, report, human)


def _report(
    ctx: Ctx,
    result: dict[str, Any],
    png: Path | None,
    chart: Callable[[dict[str, Any], Path], str | None],
    table: Callable[[dict[str, Any], Any], None],
) -> None:
    """Draw the chart when asked (a failure becomes a note), then emit the result:
    one JSON document, or the table for a person."""
    result["png"] = None
    if png is not None:
        note = chart(result, png)
        if note:
            result["notes"].append(note)
        else:
            result["png"] = str(png)

    def human() -> None:
        from rich.console import Console

        # piped output gets room for every column instead of rich's default 80
        console = Console() if sys.stdout.isatty() else Console(width=120)
        table(result, console)
        if result["png"]:
            console.print(f"chart: {result['png']}")

    emit(ctx, result, human)


@eval_group.command("docs")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--k", "k_text", default="10,100", show_default=True,
              help="Comma-separated k for recall@k (nDCG is at 10).")  # fmt: skip
@click.option("--split", default="test", show_default=True, help="The qrels file: qrels/SPLIT.tsv.")
@click.option(
    "--embedder",
    "embedder_name",
    default="default",
    show_default=True,
    type=click.Choice(["default", "hash", "none"]),
    help="The embedder remem and the dense baseline use.",
)
@json_option
@click.pass_obj
def docs_eval(ctx: Ctx, path: Path, k_text: str, split: str, embedder_name: str) -> None:
    """Document retrieval on a BEIR-layout directory (corpus.jsonl, queries.jsonl,
    qrels/SPLIT.tsv): nDCG@10 and recall@k of remem's documents, BM25 and dense over the
    same entries, in one run, in a temporary database."""
    from remem.eval.docs import run_docs, table

    result = run_docs(path, parse_ks(k_text), pick_embedder(embedder_name), split)

    def human() -> None:
        from rich.console import Console

        table(result, Console() if sys.stdout.isatty() else Console(width=120))

    emit(ctx, result, human)


@eval_group.command("everyday")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--k", default=10, show_default=True, type=click.IntRange(1, 1000),
              help="How many items a packet (and a baseline's top k) holds at most.")  # fmt: skip
@click.option("--budget", default=1000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="The token budget of every packet.")  # fmt: skip
@click.option("--baselines", is_flag=True,
              help="Also run dense and BM25 top-k over the same raw turns.")  # fmt: skip
@click.option("--embedder", "embedder_name", default="default", show_default=True,
              metavar="NAME|PATH|URL", help=EMBEDDER_HELP)  # fmt: skip
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a chart of hit rate per question type (needs matplotlib).")  # fmt: skip
@json_option
@click.pass_obj
def everyday(
    ctx: Ctx,
    path: Path,
    k: int,
    budget: int,
    baselines: bool,
    embedder_name: str,
    png: Path | None,
) -> None:
    """Everyday recall of a file of personas and the questions asked of them.

    Each persona's turns are added as events (their own roles and times) and
    processed, in a temporary database; each question is asked of its
    persona's actor with recall. Per question type and over the answerable
    ones: hit rate (every 'must' group in the packet), group coverage,
    current_ok, packet items and tokens, empty packets; off-topic items;
    filler assistant turns per 100 packets.
    """
    from remem.eval.everyday import run
    from remem.eval.report import print_everyday, write_everyday_chart

    with _progress(not ctx.as_json) as hook:
        result = run(path, k=k, budget=budget, embedder=pick_embedder(embedder_name),
                     with_baselines=baselines, progress=hook)  # fmt: skip
    _report(ctx, result, png, write_everyday_chart, print_everyday)
