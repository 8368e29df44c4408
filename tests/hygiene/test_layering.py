"""The layering of STYLE.md, drawn from the package's own imports.

Every `import` and `from ... import` of `remem` counts, at module level and
inside functions alike (an import inside a function still ties the modules
together), except those under `if TYPE_CHECKING:`, which only name types.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.support import SRC

MAX_LINES = 600

# the facade and pipeline half of the one-house work (and the doors it shares)
FACADE = (
    "remem.memory",
    "remem.writes",
    "remem.pipeline",
    "remem.consolidate",
    "remem.facts",
    "remem.lifecycle",
    "remem.thread",
    "remem.embed",
)
FACES = (
    "remem.cli",
    "remem.service",
    "remem.console",
    "remem.memory.aio",
)
# values, and the leaves beside them that import nothing of ours but values (forksafe's
# locks; blas, its one-thread limit; files, the bounded reader every file a caller names
# goes through; batching, the merging of concurrent calls the embedders and the vector
# search share)
VALUES = (
    "remem.model",
    "remem.errors",
    "remem.ids",
    "remem.timeutil",
    "remem.forksafe",
    "remem.linger",
    "remem.blas",
    "remem.files",
    "remem.prompt",
    "remem.batching",
)
PIPELINE = ("remem.pipeline", "remem.consolidate")


def _under(module: str, parts: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in parts)


@cache
def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: its file, and whether it is a package's __init__."""
    out = {}
    for path in (SRC / "remem").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _resolve(name: str) -> str | None:
    """The module of ours `name` is, or lies in (an attribute of a module)."""
    mods = _modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    skip.update(id(n) for n in ast.walk(stmt))
    return skip


def _imports(module: str) -> set[str]:
    """The modules of ours that `module` imports (module level and inside functions)."""
    path, is_package = _modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    package = module if is_package else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(_resolve(a.name) for a in node.names if a.name.startswith("remem"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source != "remem" and not source.startswith("remem."):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                found.add(full if full in _modules() else _resolve(source))
    return {m for m in found if m is not None and m != module}


@cache
def _graph() -> dict[str, frozenset[str]]:
    return {m: frozenset(_imports(m)) for m in _modules()}


def _circles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _edges(sources: tuple[str, ...], targets: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{m} -> {d}"
        for m, deps in _graph().items()
        if _under(m, sources)
        for d in deps
        if _under(d, targets)
    )


def _long(modules: list[str]) -> list[str]:
    out = []
    for m in modules:
        path, _ = _modules()[m]
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            out.append(f"{m}: {n} lines")
    return sorted(out)


def test_the_graph_sees_imports_inside_functions_and_skips_type_checking_ones() -> None:
    # the drawing itself: memory/memory.py imports the store at module level, and
    # embed.base imports the MiniLM embedder inside `default_embedder`
    assert "remem.store.roles" in _graph()["remem.memory.memory"]
    assert "remem.embed.minilm.embedder" in _graph()["remem.embed.base"]
    assert "remem.store.roles" not in _graph()["remem.thread.api"]  # TYPE_CHECKING only


def test_no_import_circle_touches_the_facade_or_the_pipeline() -> None:
    touching = [g for g in _circles() if any(_under(m, FACADE) for m in g)]
    assert touching == []


def test_no_import_circles() -> None:
    assert _circles() == []


def test_policy_never_imports_the_store_or_a_face() -> None:
    assert _edges(("remem.policy",), ("remem.store", *FACES)) == []


def test_recall_the_pipeline_and_policy_never_import_a_face() -> None:
    assert _edges(("remem.recall", *PIPELINE, "remem.policy"), FACES) == []


def test_values_import_nothing_of_ours_but_values() -> None:
    edges = [(m, d) for m in _modules() if _under(m, VALUES) for d in _graph()[m]]
    assert [f"{m} -> {d}" for m, d in edges if not _under(d, VALUES)] == []


def test_no_module_of_the_facade_or_the_pipeline_is_over_600_lines() -> None:
    assert _long([m for m in _modules() if _under(m, FACADE)]) == []


def test_no_module_is_over_600_lines() -> None:
    assert _long(list(_modules())) == []


# -- SQL parameters are named on both backends (issue 14, item 7) ---------------------------

SQL_PACKAGES = ("remem.store", "remem.thread")
_SQL_WORD = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|WHERE|VALUES|SET|LIMIT|AND|FROM)\b")
_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")  # SQL literals and identifiers
_POSITIONAL = re.compile(r"\?|(?<!%)%s")  # SQLite's `?`, psycopg's `%s` (not `%(name)s`)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of every module, class and function docstring node."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant | ast.JoinedStr):
                out.add(id(body[0].value))
    return out


def _string_constants(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal (an f-string's literal parts joined by a space) but docstrings."""
    skip = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            if isinstance(node, ast.JoinedStr):
                skip.update(id(v) for v in node.values)
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            found.append((node.lineno, " ".join(str(p) for p in parts)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
    return found


def _positional_sql() -> list[str]:
    """Where a SQL string of the store or thread state binds a parameter by position: a
    `?` or `%s` outside quoted literals in a string with SQL words, or a lone mark (the
    pieces of a hand-spliced `IN (?, ?, ...)`)."""
    out = []
    for module, (path, _) in sorted(_modules().items()):
        if not _under(module, SQL_PACKAGES):
            continue
        for line, text in _string_constants(ast.parse(path.read_text(encoding="utf-8"))):
            bare = _QUOTED.sub("''", text)
            lone = text.strip() in ("?", "%s")
            if lone or (_SQL_WORD.search(bare) and _POSITIONAL.search(bare)):
                out.append(f"{module}:{line}: {' '.join(text.split())[:70]}")
    return out


def test_sql_parameters_are_named_on_both_backends() -> None:
    # `:name` on SQLite and `%(name)s` on PostgreSQL: a statement's parameters travel
    # as a mapping, never as a list whose order a reader must count
    assert _positional_sql() == []


# -- the shape of the house (issue 34, item 1) -----------------------------------------------

TOP_LEVEL = ("remem", "remem.__main__", *VALUES)  # the only modules beside the packages
FAMILY = 3  # siblings sharing a `prefix_` are a package waiting to be made
# what the PostgreSQL backend has that SQLite keeps inside its `sql.py` and `store.py`:
# psycopg's row and type adapters, the one scope clause three statement builders share,
# the job queue's statements (in `sql.py` they would take it past 600 lines), and a
# recall's reads in one transaction bound to its tenant (SQLite binds no tenant), and
# the term windows word searches keep (SQLite keeps its phrases' in `upkeep.py`), and
# libpq's pipeline driven directly for those reads (SQLite has no wire)
POSTGRES_ONLY = {"job_sql.py", "rows.py", "span.py", "terms.py", "wire.py"}


def test_only_values_at_the_top_level() -> None:
    top = [
        m
        for m, (path, is_package) in _modules().items()
        if path.parent == SRC / "remem" and not is_package and m not in TOP_LEVEL
    ]
    assert sorted(top) == []


def _families() -> list[str]:
    """Every folder's groups of FAMILY or more modules named `p.py`, `p_x.py`, `p_y.py`..."""
    out = []
    for folder in sorted({p.parent for p, _ in _modules().values()}):
        stems = [f.stem for f in folder.glob("*.py") if f.stem != "__init__"]
        for prefix in sorted({s.split("_")[0] for s in stems if "_" in s}):
            family = sorted(s for s in stems if s == prefix or s.startswith(prefix + "_"))
            if len(family) >= FAMILY:
                out.append(f"{folder.relative_to(SRC)}: {', '.join(family)}")
    return out


def test_no_family_of_three_prefixed_siblings() -> None:
    assert _families() == []


def _imports_of(module: str, name: str) -> bool:
    """Whether `module` imports the outside package `name` (or one of its modules)."""
    tree = ast.parse(_modules()[module][0].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name == name or a.name.startswith(name + ".") for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == name or node.module.startswith(name + "."):
                return True
    return False


def test_click_is_imported_only_under_cli() -> None:
    outside = [m for m in _modules() if _imports_of(m, "click") and not _under(m, ("remem.cli",))]
    assert sorted(outside) == []
    assert _imports_of("remem.cli.main", "click")  # the check sees an import


def _backend_files(backend: str) -> set[str]:
    """A store backend's modules by path inside its folder, vectors and packages aside."""
    folder = SRC / "remem" / "store" / backend
    return {
        str(p.relative_to(folder))
        for p in folder.rglob("*.py")
        if p.name != "__init__.py" and "vectors" not in p.relative_to(folder).parts
    }


def test_each_store_backend_has_the_same_files() -> None:
    sqlite, postgres = _backend_files("sqlite"), _backend_files("postgres")
    assert sorted(sqlite - postgres) == []
    assert postgres - sqlite == POSTGRES_ONLY


def test_no_test_imports_another_test_module() -> None:
    """Tests share code through tests/support only: a test module or conftest.py imports
    no other test module or conftest (pytest finds the fixtures of a conftest.py itself)."""
    root = SRC.parent / "tests"
    wrong = []
    for path in root.rglob("*.py"):
        if path.is_relative_to(root / "support"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "tests" and not _under(name, ("tests.support",)):
                    wrong.append(f"{path.relative_to(root)}: {name}")
    assert wrong == [], "import shared code from tests.support instead: " + ", ".join(wrong)


# -- store roles are composed objects (issue 34, item 2) --------------------------------------


def _store_classes() -> dict[str, list[tuple[str, list[str]]]]:
    """Every class under remem.store, by module: its name and its bases' names (the last
    part of a dotted base), `Protocol` interfaces left out (they may join several)."""
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for module, (path, _) in sorted(_modules().items()):
        if not _under(module, ("remem.store",)):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rpartition(".")[2].partition("[")[0] for b in node.bases]
                if "Protocol" not in bases:
                    out.setdefault(module, []).append((node.name, bases))
    return out


def test_no_store_class_inherits_more_than_one_class_of_the_store() -> None:
    # a store is a composition root of role objects (`store.events`, `store.jobs`, ...),
    # each built over its backend: no tower of mixins, each class at most one parent of ours
    ours = {name for classes in _store_classes().values() for name, _ in classes}
    towers = [
        f"{module}.{name}: {', '.join(b for b in bases if b in ours)}"
        for module, classes in _store_classes().items()
        for name, bases in classes
        if sum(b in ours for b in bases) > 1
    ]
    assert towers == []
    assert "SQLiteStore" in ours and "Events" in ours  # the check sees the store's classes


def test_no_store_hook_raises_not_implemented() -> None:
    # a backend's part is an object it passes in (a small Protocol), never a method a
    # subclass must override or fail late
    found = [
        f"{module}: {n}"
        for module, (path, _) in sorted(_modules().items())
        if _under(module, ("remem.store",))
        and (n := path.read_text(encoding="utf-8").count("NotImplementedError"))
    ]
    assert found == []
