"""Every SQL call site takes values as bound parameters; interpolated text is an allow-listed identifier.

The test parses ingest/, analysis/ and runner/ with ``ast`` and finds every SQL sink: ``.execute(`` /
``.executemany(`` / ``.sql(`` / ``.query(`` (first argument) and ``ingest.sql.one`` / ``ingest.sql.frame``
(also imported as ``query``; second argument). It resolves the SQL argument through local assignments,
``+`` concatenation, ``" ".join(...)`` and f-strings down to the pieces that are *interpolated* into the
text. A piece is safe when it is a string constant or a module-level string constant; anything else must
be listed in :data:`ALLOWED` for that file with the reason it cannot carry user text. ``%`` and
``.format`` on SQL are always flagged. The dashboard must hold no SQL at all.

Adding a new f-string interpolation to SQL therefore fails this test until someone checks where the
value comes from and adds it here — which is the point.
"""

from __future__ import annotations

import ast

from tests.conftest import REPO

SCANNED = ("ingest", "analysis", "runner")
# ingest/sql.py's helpers are the sinks themselves: their `sql` parameter is checked at every call site.
PASS_THROUGH = {("ingest/sql.py", "sql")}
# (file, interpolated expression) → why it cannot carry user text.
ALLOWED: dict[tuple[str, str], str] = {
    ("ingest/store.py", "col"): "column names from ingest/ddl.py COLUMN_TYPES (compiled from the schema), quoted",
    ("ingest/store.py", "kind"): "DuckDB type names from ingest/ddl.py COLUMN_TYPES (compiled from the schema)",
    ("ingest/watch/land.py", "table"): "one of the fixed watch_* table names of ingest/schema.py",
    ("ingest/watch/land.py", "names"): "that table's column names from the schema, quoted",
    ("ingest/watch/land.py", "view"): "'_incoming_' + a fixed watch_* table name",
    ("analysis/choices.py", "dimension"): "checked against the fixed DIMENSIONS tuple just above",
    ("analysis/frames.py", "metric"): "checked against ddl.COLUMNS['cell_bootstrap'] (a replicated column name)",
    ("analysis/frames.py", "values"): "joins 'b.<metric>' for metrics checked against ddl.COLUMNS['cell_bootstrap'] "
                                      "just above, aliased v0, v1 …",
    ("analysis/production/load.py", "where"): "_where() joins fixed column names; every value is a bound ? parameter",
    ("analysis/production/load.py", "cols"): "the fixed SAMPLE_COLS names; counters wrapped by _counter() (fixed text)",
    ("analysis/production/load.py", "' AND '.join(clauses)"): "fixed 'c.<column> = ?' clauses; values are bound",
    ("ingest/store.py", "table"): "loops over fixed tuples of store table names / schema.metadata tables",
    ("ingest/store.py", "names"): "column names from ingest/ddl.py COLUMNS (compiled from the schema), quoted",
    ("ingest/store.py", "statement"): "DDL compiled from the SQLAlchemy schema into ingest/ddl.py",
    ("runner/tune.py", "col"): "a metric's value column, checked against ddl.COLUMNS['cells'] just before",
    ("analysis/frames.py", "c"): "element of the DIMENSION_COLUMNS + CELL_COLUMNS allow-lists (analysis/metrics.py)",
    ("analysis/frames.py", "where"): "_where() joins fixed column names; every value is a bound ? parameter",
    ("analysis/frames.py", "m.name"): "metric name from get_metric(), i.e. a METRICS key",
    ("analysis/frames.py", "col"): "loops over a fixed tuple of dimension names",
    ("analysis/derived.py", "table"): "one of the two fixed table names derived_matrices / derived_matrix_cells",
    ("analysis/derived.py", "names"): "column names of the frames built just above from fixed field tuples "
                                      "(CELL_FIELDS, ARRAYS and the matrices' fixed heads)",
    ("analysis/derived_read.py", "', '.join(parts)"): "subqueries over the fixed HASHED and COUNTED table names",
    ("ingest/default_data.py", "table"): "a table name of ingest/ddl.py COLUMNS that has a run_id column",
    ("ingest/goodput.py", "LAND_SQL"): "module constant built from fixed text (CASE bins over ? parameters) and VIEW",
    ("ingest/goodput.py", "CLEAR_SQL"): "module constant: fixed text and the fixed VIEW name",
    ("ingest/goodput.py", "BACKFILL_SQL"): "module constant built from the same fixed text; grid values are bound",
    ("analysis/provenance.py", "t"): "loops over the fixed TABLES tuple, filtered by information_schema",
}
SINK_METHODS = {"execute", "executemany", "sql", "query"}
SQL_HELPERS = {"one", "frame"}


def _module_constants(tree: ast.Module) -> set[str]:
    """Names bound at module level to string constants or tuples/lists of them (fixed text)."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            fixed = isinstance(value, ast.Constant) and isinstance(value.value, str)
            if isinstance(value, ast.Tuple | ast.List):
                fixed = all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)
            if isinstance(value, ast.JoinedStr):
                fixed = all(isinstance(v, ast.Constant) for v in value.values)
            if fixed:
                out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def _helper_aliases(tree: ast.Module) -> set[str]:
    """Local names of ingest.sql.one / ingest.sql.frame (``from ingest.sql import frame as query``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "ingest.sql":
            out |= {a.asname or a.name for a in node.names if a.name in SQL_HELPERS}
    return out


class Finder:
    def __init__(self, rel: str, tree: ast.Module) -> None:
        self.rel, self.tree = rel, tree
        self.constants = _module_constants(tree)
        self.aliases = _helper_aliases(tree)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def scope(self, node: ast.AST) -> ast.AST:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node
        return self.tree

    def sinks(self) -> list[tuple[ast.Call, ast.expr]]:
        out = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in SINK_METHODS and node.args:
                out.append((node, node.args[0]))
            elif len(node.args) >= 2 and self.is_helper(f):
                out.append((node, node.args[1]))
        return out

    def is_helper(self, f: ast.expr) -> bool:
        """``sql.one`` / ``sql.frame`` or a name imported from ingest.sql."""
        if isinstance(f, ast.Attribute):
            return f.attr in SQL_HELPERS and isinstance(f.value, ast.Name) and f.value.id == "sql"
        return isinstance(f, ast.Name) and f.id in self.aliases

    def holes(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> list[str]:
        """Interpolated pieces of ``expr`` that are not fixed text (as source strings)."""
        if depth > 8:
            return [ast.unparse(expr)]
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return []
        if isinstance(expr, ast.Name) and expr.id in self.constants:
            return []
        if isinstance(expr, ast.JoinedStr):
            out = []
            for v in expr.values:
                if isinstance(v, ast.FormattedValue):
                    out += self.piece(v.value, at, depth + 1)
            return out
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.holes(expr.left, at, depth + 1) + self.holes(expr.right, at, depth + 1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod):
            return ["%-formatting"]
        if isinstance(expr, ast.IfExp):
            return self.holes(expr.body, at, depth + 1) + self.holes(expr.orelse, at, depth + 1)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "format":
                return [".format()"]
            if expr.func.attr == "join" and isinstance(expr.func.value, ast.Constant) and expr.args:
                return self.joined(expr.args[0], at, depth + 1)
        if isinstance(expr, ast.Name):
            values = self.assigned(expr.id, at)
            if values is None:  # a parameter, loop variable or tuple-unpacked name
                return [expr.id]
            return [h for v in values for h in self.holes(v, at, depth + 1)]
        return [ast.unparse(expr)]

    def piece(self, expr: ast.expr, at: ast.AST, depth: int) -> list[str]:
        """An interpolated expression: safe only when it resolves to fixed text."""
        if isinstance(expr, ast.Name) and expr.id in self.constants:
            return []
        if isinstance(expr, ast.IfExp):
            return self.piece(expr.body, at, depth) + self.piece(expr.orelse, at, depth)
        if isinstance(expr, ast.Name):
            values = self.assigned(expr.id, at)
            if values is not None and all(self.holes(v, at, depth + 1) == [] for v in values):
                return []
            if values is not None:
                inner = [h for v in values for h in self.holes(v, at, depth + 1)]
                return inner if all((self.rel, h) in ALLOWED for h in inner) else [expr.id]
        return [ast.unparse(expr)]

    def joined(self, arg: ast.expr, at: ast.AST, depth: int) -> list[str]:
        if isinstance(arg, ast.GeneratorExp | ast.ListComp):
            return self.holes(arg.elt, at, depth)
        if isinstance(arg, ast.Name) and arg.id in self.constants:
            return []
        if isinstance(arg, ast.Name):
            values = self.assigned(arg.id, at)
            if values is not None:
                return [h for v in values for h in self.joined(v, at, depth + 1)]
        return [ast.unparse(arg)]

    def assigned(self, name: str, at: ast.AST) -> list[ast.expr] | None:
        """Values assigned to ``name`` in the scope of ``at`` (None: not a plain assignment)."""
        out = []
        for node in ast.walk(self.scope(at)):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id == name:
                        out.append(node.value)
                    elif isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name for e in t.elts):
                        return None
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                out.append(node.value)
        return out or None


def scan_source(rel: str, text: str) -> list[str]:
    """Problems in one file: ``file:line: SQL interpolates <expr>``."""
    finder = Finder(rel, ast.parse(text))
    problems = []
    for call, arg in finder.sinks():
        for hole in finder.holes(arg, call):
            if (rel, hole) in ALLOWED or (rel, hole) in PASS_THROUGH:
                continue
            problems.append(f"{rel}:{call.lineno}: SQL interpolates {hole!r}")
    return problems


def _files(folders: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for folder in folders:
        for path in sorted((REPO / folder).rglob("*.py")):
            out.append((str(path.relative_to(REPO)), path.read_text()))
    return out


def test_no_sql_call_site_interpolates_anything_but_allow_listed_identifiers() -> None:
    problems = [p for rel, text in _files(SCANNED) for p in scan_source(rel, text)]
    assert not problems, "\n".join(problems)


def test_the_scan_sees_the_call_sites() -> None:
    """Not vacuous: the scanner finds the store's and analysis' real SQL (dozens of sites, both sink kinds)."""
    sites = {rel: len(Finder(rel, ast.parse(text)).sinks()) for rel, text in _files(SCANNED)}
    assert sum(sites.values()) >= 30, sites
    assert sites["ingest/store.py"] >= 10 and sites["analysis/frames.py"] >= 5


def test_the_dashboard_holds_no_sql() -> None:
    found = [f"{rel}:{c.lineno}" for rel, text in _files(("dashboard",))
             for c, _ in Finder(rel, ast.parse(text)).sinks()]
    assert not found, found


def test_the_scanner_flags_injection_shapes() -> None:
    """The checker itself: each classic way of building SQL from a value is caught."""
    bad = {
        "fstring": "def f(con, fam):\n    con.execute(f\"SELECT * FROM cells WHERE family = '{fam}'\")\n",
        "via_variable": "def f(con, fam):\n    q = f\"SELECT * FROM cells WHERE family = '{fam}'\"\n"
                        "    return con.sql(q)\n",
        "concat": "def f(con, fam):\n    con.execute(\"SELECT * FROM cells WHERE family = '\" + fam + \"'\")\n",
        "percent": "def f(con, fam):\n    con.execute(\"SELECT * FROM cells WHERE family = '%s'\" % fam)\n",
        "format": "def f(con, fam):\n    con.execute(\"SELECT * FROM cells WHERE family = '{}'\".format(fam))\n",
        "helper": "from ingest.sql import frame as query\ndef f(con, fam):\n"
                  "    return query(con, f\"SELECT * FROM cells WHERE family = '{fam}'\")\n",
        "sql_one": "from ingest import sql\ndef f(con, fam):\n    return sql.one(con, 'SELECT 1 WHERE x = ' + fam)\n",
        "joined": "def f(con, names):\n    con.execute('SELECT ' + ', '.join(n for n in names))\n",
    }
    for name, text in bad.items():
        assert scan_source("x/bad.py", text), name
    good = ("FIXED = 'SELECT 1'\ndef f(con, fam):\n"
            "    con.execute('SELECT * FROM cells WHERE family = ?', [fam])\n"
            "    con.sql(f'{FIXED} WHERE x = ?', params=[fam])\n")
    assert scan_source("x/good.py", good) == []


def test_no_fetchone_anywhere():
    """DuckDB 2.0 keeps an ``execute()`` result open after ``fetchone()`` and then refuses all other work on
    that connection: one such call on a shared (module-scoped) connection broke nine tests after it in CI."""
    offenders = []
    for folder in (*SCANNED, "dashboard", "spectune", "scripts", "benchmarks", "tests"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            offenders += [f"{path.relative_to(REPO)}:{node.lineno}" for node in ast.walk(tree)
                          if isinstance(node, ast.Attribute) and node.attr == "fetchone"]
    assert offenders == [], f"use .fetchall() or ingest.sql.one instead of .fetchone(): {offenders}"
