"""Structure the design promises, checked on the source: the dependency direction between
packages, no import cycles between modules, no I/O in the protocol package, no asyncio in
storage, short functions, no mixins, no use of another module's underscore names,
no timings in comments, stores beside their interfaces.

DESIGN.md: protocol <- broker, protocol <- client <- spark_connector; the broker never imports
the client; storage has no asyncio; the protocol package does no I/O.

Imports are read as Python resolves them: relative ones (``from ..server.state import
Broker``) against the importing module's package, so they cannot slip past the direction
check; and every import counts, the ones under ``if TYPE_CHECKING:`` and inside functions
too, because a cycle hidden from the interpreter is still two modules that cannot be
understood, tested or replaced one without the other (issue 21: ``ReplicaManager`` took the
whole ``Broker`` it was itself a part of).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"protocol": "protocol", "broker": "broker", "client": "client", "spark_connector": "spark_connector"}
ALLOWED = {
    "protocol": {"protocol"},
    "broker": {"protocol", "broker"},
    "client": {"protocol", "client"},
    "spark_connector": {"protocol", "client", "spark_connector"},
}
NO_IO_MODULES = {"socket", "asyncio", "selectors", "ssl", "subprocess", "uvloop"}


def source_files(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


def module_name(path: Path) -> str:
    """The dotted name ``path`` is installed under: ``broker/server/state.py`` is
    ``tslog.broker.server.state``; a package's ``__init__.py`` is the package itself."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["tslog", *parts]) if parts[0] in PACKAGES else ".".join(parts)


def _package_of(path: Path) -> str:
    """The package a relative import in ``path`` starts from (level 1)."""
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports_in(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """Every import in ``path`` as (absolute module, names taken from it), relative ones
    resolved against the module's package. ``import a.b`` takes no names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level == 0:
                found.append((node.module, names))
                continue
            base = _package_of(path).split(".")
            if node.level > 1:
                base = base[:-(node.level - 1)]
            found.append((".".join(base + ([node.module] if node.module else [])), names))
    return found


def imported_modules(path: Path) -> set[str]:
    return {module for module, _ in imports_in(path)}


def tslog_package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "tslog" and len(parts) > 1:
        return parts[1]
    return None


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_dependency_direction(package):
    offenders = []
    for path in source_files(PACKAGES[package]):
        for module in imported_modules(path):
            target = tslog_package(module)
            if target is not None and target not in ALLOWED[package]:
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert not offenders, offenders


@functools.cache  # read once per run: several tests ask
def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the four packages it imports. ``from package import name``
    is an edge to the submodule ``package.name`` when one exists, else to the package."""
    paths = {module_name(path): path for folder in PACKAGES.values()
             for path in source_files(folder)}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges = graph.setdefault(module, set())
        for target, names in imports_in(path):
            submodules = {f"{target}.{name}" for name in names} & paths.keys()
            edges.update(submodules)
            if len(submodules) < len(names) or not names:  # names defined in ``target``
                edges.add(target)
        edges.intersection_update(paths)  # the stdlib and third parties have no say here
        edges.discard(module)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted: every module in one imports every other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_relative_imports_are_resolved():
    """The direction check sees ``from ..x import y`` as the absolute module it names."""
    path = ROOT / "broker" / "server" / "handlers.py"
    assert module_name(path) == "tslog.broker.server.handlers"
    assert {module for module in imported_modules(path) if module.startswith("tslog.broker.")}
    assert module_name(ROOT / "broker" / "storage" / "__init__.py") == "tslog.broker.storage"


def test_import_cycles_are_found():
    """The cycle finder itself, on a graph with one two-module and one three-module cycle."""
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert sorted(import_cycles(graph)) == [["a", "b"], ["c", "d", "e"]]


def test_no_import_cycles():
    """No module imports itself through others, counting imports made only for type
    checking or only inside a function: each is a dependency all the same."""
    graph = import_graph()
    assert len(graph) > 50, "the check read too few modules to mean anything"
    assert import_cycles(graph) == []


def _broker_imports(module: str) -> set[str]:
    return {target for target in import_graph()[module] if target.startswith("tslog.broker")}


def test_replication_depends_on_storage_and_the_cluster_view_only():
    """Issue 21: the data path's replication is below the server; it is handed the hosted
    logs, the view, a clock and a notifier, and reports its own metrics."""
    allowed = ("tslog.broker.replication", "tslog.broker.storage", "tslog.broker.cluster.view",
               "tslog.broker.metrics.replication")
    offenders = [f"{module} imports {target}" for module in import_graph()
                 if module.startswith("tslog.broker.replication")
                 for target in _broker_imports(module) if not target.startswith(allowed)]
    assert not offenders, offenders


def test_the_groups_sit_below_the_server():
    """Issue 41: the consumer groups (both coordinators, their stores on disk and in etcd,
    their services) live in ``broker/groups`` and import nothing of ``broker/server``: the
    front doors call the groups, never the reverse. Their state lives in storage's files or
    the cluster's etcd."""
    groups = [module for module in import_graph() if module.startswith("tslog.broker.groups")]
    assert {"tslog.broker.groups.service", "tslog.broker.groups.classic_service",
            "tslog.broker.groups.committed_offsets", "tslog.broker.groups.offset_etcd",
            "tslog.broker.groups.state_etcd"} <= set(groups)
    offenders = [f"{module} imports {target}" for module in groups
                 for target in _broker_imports(module)
                 if target.startswith(("tslog.broker.server", "tslog.broker.security",
                                       "tslog.broker.replication"))]
    assert not offenders, offenders


def test_the_typed_services_sit_below_the_server_and_the_gate():
    """Issue 41: the data and topic admin services (``broker/data``, ``broker/admin``) are
    what both ports' adapters and the request gate call; they import nothing of
    ``broker/server`` or ``broker/security``, so neither front door nor the gate can leak
    into them."""
    services = [module for module in import_graph()
                if module.startswith(("tslog.broker.data", "tslog.broker.admin"))]
    assert {"tslog.broker.data.service", "tslog.broker.admin.topics"} <= set(services)
    offenders = [f"{module} imports {target}" for module in services
                 for target in _broker_imports(module)
                 if target.startswith(("tslog.broker.server", "tslog.broker.security"))]
    assert not offenders, offenders


def test_no_group_module_outside_the_groups_folder():
    """Issue 41: one place for groups. No module of ``broker/`` outside ``broker/groups``
    is a group store or service (the protocol adapters, ``*group*`` in ``broker/server``
    and ``broker/server/kafka``, are the front doors' edges and stay there, as does the request
    gate's ``GatedGroups`` in ``broker/security``)."""
    edges = {"broker/server/group_handlers.py", "broker/server/kafka/group_apis.py",
             "broker/server/kafka/group_admin_apis.py",
             "broker/security/group_gate.py"}  # the request gate's judge of the group service
    strays = [str(path.relative_to(ROOT)) for path in source_files("broker")
              if "group" in path.name and "groups" not in path.relative_to(ROOT).parts
              and str(path.relative_to(ROOT)) not in edges]
    assert strays == []


def _given_narrow_services() -> list[Path]:
    """The modules that are handed narrow services, never the broker: every request
    handler module, the connection (it gets the dispatch table) and the metrics (they get
    ``ScrapeSources``)."""
    server = ROOT / "broker" / "server"
    return [*sorted(server.glob("*handlers*.py")), server / "connection.py",
            *source_files("broker/metrics")]


def test_the_narrow_service_check_reads_the_modules_it_means():
    names = {str(path.relative_to(ROOT)) for path in _given_narrow_services()}
    assert {"broker/server/handlers.py", "broker/server/data_handlers.py",
            "broker/server/partition_handlers.py", "broker/server/connection.py",
            "broker/metrics/snapshot.py", "broker/metrics/server.py"} <= names


@pytest.mark.parametrize("path", _given_narrow_services(),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_handlers_connections_and_metrics_never_import_the_broker(path):
    """Issue 21: handlers use the narrow services of ``server/services.py``, bound once at
    start; the connection gets that dispatch table and the metrics their ``ScrapeSources``.
    Only the broker's composition (``server/state.py``) and its start-up import the whole
    ``Broker``: not from ``state``, and not by name from anywhere (``server/__init__``
    re-exports it). Relative imports are resolved, so ``from .state import`` and
    ``from . import state`` count."""
    state = "tslog.broker.server.state"
    offenders = [f"{module} ({', '.join(names) or 'the module'})"
                 for module, names in imports_in(path)
                 if module == state or "Broker" in names
                 or any(f"{module}.{name}" == state for name in names)]
    assert not offenders, offenders


def test_the_metrics_import_nothing_of_the_server():
    """The server imports the metrics (it counts requests and starts the endpoint), so the
    metrics importing any of the server would be a cycle in the making."""
    offenders = [f"{path.relative_to(ROOT)} imports {module}"
                 for path in source_files("broker/metrics") for module in imported_modules(path)
                 if module == "tslog.broker.server" or module.startswith("tslog.broker.server.")]
    assert not offenders, offenders


def imports_of(folder: str, banned: set[str]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in source_files(folder)
        for module in imported_modules(path)
        if module.split(".")[0] in banned
    ]


def test_protocol_does_no_io():
    assert not imports_of("protocol", NO_IO_MODULES)


def test_storage_has_no_asyncio():
    assert not imports_of("broker/storage", {"asyncio", "uvloop"})


MAX_FUNCTION_LINES = 70  # TigerBeetle's tidy.zig: a function fits on a screen


def test_functions_stay_short():
    """Issue 41: the cap is on functions (def line to last line, nested ones counted in
    their parent too), not on files: a file cap split classes across modules held together
    by mixins, where a function cap makes each step a named function."""
    long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines"
            for folder in PACKAGES.values() for path in source_files(folder)
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (length := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES]
    assert not long, long


@functools.cache
def _classes() -> dict[str, list[tuple[Path, ast.ClassDef]]]:
    """Every class of the four packages by name (a name may be defined twice)."""
    found: dict[str, list[tuple[Path, ast.ClassDef]]] = {}
    for folder in PACKAGES.values():
        for path in source_files(folder):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ClassDef):
                    found.setdefault(node.name, []).append((path, node))
    return found


def _base_names(cls: ast.ClassDef) -> list[str]:
    return [base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            for base in cls.bases]


def _defined_on(cls: ast.ClassDef, classes) -> set[str]:
    """The names a class and its project bases define: methods, class attributes
    (annotated or assigned) and every ``self.x`` any of their methods assigns."""
    names = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
                elif isinstance(leaf, ast.Attribute) and getattr(leaf.value, "id", "") == "self":
                    names.add(leaf.attr)
    for base in _base_names(cls):
        for _, base_cls in classes.get(base, []):
            names |= _defined_on(base_cls, classes)
    return names


def _parts_of_another_class(cls: ast.ClassDef, classes) -> set[str]:
    """The ``self.x`` a class reads but neither it nor its bases define: state that only a
    subclass provides, which makes the class a part of another, not a class of its own."""
    read = {node.attr for node in ast.walk(cls) if isinstance(node, ast.Attribute)
            and getattr(node.value, "id", "") == "self"}
    return read - _defined_on(cls, classes)


def test_no_mixins():
    """Issue 41: a class is a whole. No class named ``*Mixin``, and no project base class
    that uses state only its subclass has (``self._cluster`` set by ``AsyncProducer`` and
    read by the batching half): compose an object with its own state, or write functions."""
    classes = _classes()
    offenders = []
    for name, definitions in classes.items():
        for path, cls in definitions:
            where = f"{path.relative_to(ROOT)}:{cls.lineno} {name}"
            if name.endswith("Mixin"):
                offenders.append(f"{where} is named a mixin")
            for base in _base_names(cls):
                for _, base_cls in classes.get(base, []):
                    if missing := _parts_of_another_class(base_cls, classes):
                        offenders.append(f"{where}: base {base} reads {sorted(missing)}")
    assert len(classes) > 100, "the check read too few classes to mean anything"
    assert not offenders, offenders


def test_the_mixin_check_finds_a_part_of_a_class():
    tree = ast.parse("class Half:\n    def f(self):\n        return self._other\n"
                     "class Whole(Half):\n    def __init__(self):\n        self._other = 1\n")
    half, _ = tree.body
    assert _parts_of_another_class(half, {"Half": [(None, half)]}) == {"_other"}


def _private_uses(path: Path) -> list[str]:
    """``from x import _y`` and ``module._y`` where ``x``/``module`` is a project module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    modules = set(import_graph())
    aliases = {}  # local name -> project module it is bound to
    found = []
    for module, names in imports_in(path):
        if not module.startswith("tslog."):
            continue
        found += [f"from {module} import {name}" for name in names
                  if name.startswith("_") and not name.startswith("__")
                  and f"{module}.{name}" not in modules]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
    targets = {local for local, name in aliases.items()
               if any(module == name or module.endswith("." + name) for module in modules)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.endswith("__")
                and (ast.unparse(node.value) in targets or ast.unparse(node.value) in modules)):
            found.append(f"{ast.unparse(node)} (line {node.lineno})")
    return found


def test_the_underscore_check_finds_imports_and_attribute_reads(tmp_path):
    path = tmp_path / "user.py"
    path.write_text("from tslog.protocol.messages import _private, public\n"
                    "from tslog.protocol import messages\n"
                    "import tslog.protocol.records as records\n"
                    "value = messages._hidden + records._other + public._own\n")
    assert sorted(_private_uses(path)) == ["from tslog.protocol.messages import _private",
                                           "messages._hidden (line 4)",
                                           "records._other (line 4)"]


def test_no_module_uses_another_module_s_underscore_names():
    """Issue 41: an underscore name is its module's own; a name two modules share is public
    in the module that owns it. Third-party private names are out of this check's reach
    (``cluster/etcd_tls.py`` says why it needs aetcd's one)."""
    offenders = [f"{path.relative_to(ROOT)}: {use}" for folder in PACKAGES.values()
                 for path in source_files(folder) for use in _private_uses(path)]
    assert not offenders, offenders


# Measurements, not values: a comment may say "session timeout 45 s" or "64 KiB buffer",
# not "costs 3.5 ms", "2.5x as fast" or "200k rec/s", which go stale; the figures belong in
# bench/ output and docs/.
TIMING = re.compile(r"""
    \d\s*(?:µs|us|ns)\b                                   # micro- and nanoseconds
  | \d(?:\.\d+)?\s*[x×](?![\w-])                          # ratios: 2.5x, 0.48×
  | \d\s*(?:[kM]\s*)?(?:rec(?:ord)?s?|rows?|msgs?)/s         # throughput
  | \d\s*[kMG]i?B/s
  | \d\s*%\s*(?:faster|slower|cheaper|dearer)
  | \b(?:\d+|two|three|four|five|ten)[\s-]*(?:times|fold)\s+(?:faster|slower|cheaper)
  | \d\.\d+\s*ms\b | \d\s*-\s*\d+\s*ms\b                    # 3.5 ms, 5-16 ms
  | (?:takes?|took|costs?|spent|about|~)\s*\d[\d.,]*\s*(?:ms|s)\b
""", re.VERBOSE | re.IGNORECASE)


def _comments_and_docstrings(path: Path):
    """(line, text) of every comment token and every docstring line of ``path``."""
    source = path.read_text()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if (doc := ast.get_docstring(node, clean=False)) is not None:
                for offset, line in enumerate(doc.splitlines()):
                    yield node.body[0].lineno + offset, line


def test_the_timing_pattern_tells_measurements_from_values():
    for measured in ("about 8 us per batch", "2.5x as fast", "0.48× the native", "1.5 M rows/s",
                     "costs 3.5 ms", "5-16 ms here", "took 5 s", "8 % slower", "~3 ms of CPU"):
        assert TIMING.search(measured), measured
    for value in ("session timeout 45 s", "64 KiB buffer", "every 200 ms", "0x80s", "(10 s)",
                  "``-500ms``", "the 70s", "int64: hostile int32s", "timeout_ms=3_000"):
        assert not TIMING.search(value), value


def test_no_timings_in_comments():
    """Issue 41: figures in comments go stale (one cited a bench that does not exist). Keep
    the reasoning, drop the figure, and say which bench prints it."""
    offenders = [f"{path.relative_to(ROOT)}:{line}: {text.strip()}"
                 for folder in PACKAGES.values() for path in source_files(folder)
                 for line, text in _comments_and_docstrings(path) if TIMING.search(text)]
    assert not offenders, offenders


def test_etcd_stores_sit_beside_their_interfaces():
    """Issue 41: ``EtcdXStore`` lives in the package of ``XStore``/``LocalXStore``, so the
    interface, its local store and its etcd store are read together."""
    classes = _classes()
    offenders = set()
    for name, definitions in classes.items():
        if not (name.startswith("Etcd") and name.endswith("Store")):
            continue
        interfaces = [path for other in (name[4:], "Local" + name[4:])
                      for path, _ in classes.get(other, [])]
        offenders |= {f"{name} in {path.relative_to(ROOT)}, {name[4:]} in "
                      f"{interface.relative_to(ROOT)}" for path, _ in definitions
                      for interface in interfaces if interface.parent != path.parent}
    assert {"EtcdMetadataStore", "EtcdCredentialStore", "EtcdAclStore"} <= classes.keys()
    assert not offenders, offenders


# Undefined names (pyflakes F821, with F822/F823, its checks of ``__all__`` entries and of
# locals read before assignment): a name used on a rare path, e.g. an exception raised only
# after ``close()``, fails as NameError only when that path runs. bench/ and tests/ too.
NAME_CHECKED_FOLDERS = ["protocol", "broker", "client", "spark_connector", "bench", "tests"]


def test_no_undefined_names():
    from pyflakes import checker, messages  # the dev extra; a missing one fails, not skips

    kinds = (messages.UndefinedName, messages.UndefinedExport, messages.UndefinedLocal)
    paths = [path for folder in NAME_CHECKED_FOLDERS for path in source_files(folder)]
    paths.append(ROOT / "pyspark_tslog.py")
    found = []
    for path in paths:
        name = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(), filename=name)
        found += [str(message) for message in checker.Checker(tree, filename=name).messages
                  if isinstance(message, kinds)]
    assert len(paths) > 100, "the check read too few files to mean anything"
    assert not found, found


def _private_members_of(path: Path, class_name: str) -> set[str]:
    """The underscore names a class defines: its ``_methods`` and the ``self._fields`` its
    methods assign (dunder names are Python's, not the class's)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    cls = next(node for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef) and node.name == class_name)
    names = {node.name for node in cls.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            for leaf in ast.walk(target):
                if (isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name)
                        and leaf.value.id == "self"):
                    names.add(leaf.attr)
    return {name for name in names if name.startswith("_") and not name.endswith("__")}


def test_no_module_but_log_py_touches_a_partition_log_private_member():
    """Issue 21: one owner per log. Only ``broker/storage/log.py`` reads or writes
    ``PartitionLog``'s underscore members; others use its public methods. Checked on every
    ``x._name`` in ``broker/`` whose name is one of them and whose ``x`` is not ``self``:
    an object's own ``self._lock`` is its own business, ``plog._lock`` is the log's."""
    private = _private_members_of(ROOT / "broker" / "storage" / "log.py", "PartitionLog")
    assert {"_lock", "_segments", "_closed", "_checkpoint_lock"} <= private
    offenders = []
    for path in source_files("broker"):
        if path == ROOT / "broker" / "storage" / "log.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.Attribute) and node.attr in private
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert offenders == []


def test_the_console_uses_only_the_public_client_api():
    """DESIGN.md: the web console (``client/console/``) is a client of the cluster: it imports
    the client's public modules (``tslog.client``, ``.aio``, ``.errors``, ``.times`` ...),
    never an underscore module of the client, the protocol's internals or the broker; and the
    client outside it does not import it but for ``tslog console``'s registration."""
    offenders = []
    for path in source_files("client/console"):
        for module in imported_modules(path):
            if module.startswith("tslog.client.console") or not module.startswith("tslog."):
                continue
            if not module.startswith("tslog.client") or any(
                    part.startswith("_") for part in module.split(".")):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    for path in source_files("client"):
        if "console" in path.relative_to(ROOT).parts:
            continue
        for module in imported_modules(path):
            if module.startswith("tslog.client.console") and module != \
                    "tslog.client.console.command":
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert len(source_files("client/console")) > 5, "the check read too few modules"
    assert not offenders, offenders
