"""Architecture rules over the import graph of the production code (every import, a function's own included).

- No circle runs through a tasks module or the job platform (studio's celery app, job state machine, shards and
  engine): tasks call the engine, services enqueue through it, and nothing of the platform imports them back.
- studio/ is the platform and the project's configuration: nothing in it imports a product app, except the
  configuration modules that gather the apps (the WebSocket routes, the URL conf). The access engine takes the
  project model through its entity table (studio.access.ENTITIES, project_model), not by importing traces.
- A services package (traces/services/, exports/services/, annotation/services/) re-exports its rooms' names; the
  rooms import each other directly, never their package, and never in a circle, so each can be read and imported
  on its own.
- traces, where traces come in, imports none of the apps that read or correct them afterwards (DOWNSTREAM_OF_TRACES):
  they add to its pages and its project's records through ``traces.extensions``, registered from their ready().

- And no circle at all, anywhere in the production code: each module can be imported, read and tested after the
  modules it imports (a model never calls back into its app's services: what the engine asks of a job's files is
  declared on its kind, studio.engine.JobKind).

Each rule has a control: the same check finds the fault in a graph that holds it."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from tests.conftest import REPO

PLATFORM = {"studio.celery", "studio.jobs", "studio.shards", "studio.engine", "studio.tasks"}
# The project's configuration: it names every app by design (Django's ROOT_URLCONF, Channels' routes).
CONFIGURATION = {"studio.settings", "studio.urls", "studio.routing", "studio.asgi", "studio.wsgi"}
# The apps that read or correct traces after they come in.
DOWNSTREAM_OF_TRACES = {"annotation", "exports", "evaluation", "insights", "webhooks", "replays"}


def _module_name(path: str) -> str:
    name = path[: -len(".py")].replace("/", ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def production_modules(root: Path = REPO) -> dict[str, Path]:
    out = subprocess.run(["git", "ls-files", "*.py"], cwd=root, capture_output=True, text=True, check=True)
    paths = [
        p
        for p in out.stdout.split()
        if not p.startswith(("tests/", "bench/", "demo/", "deploy/")) and "/migrations/" not in p
    ]
    return {_module_name(p): root / p for p in paths}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of ``modules`` it imports (at its top or inside a function)."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(filter(None, (resolve(alias.name) for alias in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([base] if base else [])])
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    found.update(filter(None, [resolve(target) if target in modules else resolve(base)]))
        found.discard(module)
        graph[module] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
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
                    work.append((child, iter(sorted(graph.get(child, ())))))
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
                    found.append(sorted(component))
    return found


def job_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles that hold a tasks module or a module of the job platform."""
    return [c for c in circles(graph) if any(m.endswith(".tasks") or m in PLATFORM for m in c)]


def platform_imports_of_products(graph: dict[str, set[str]]) -> list[str]:
    """studio/'s imports of a product app (its configuration modules aside)."""
    apps = {module.split(".")[0] for module in graph} - {"studio"}
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == "studio" and module not in CONFIGURATION
        for target in targets
        if target.split(".")[0] in apps
    )


def app_imports(graph: dict[str, set[str]], app: str, of: set[str]) -> list[str]:
    """``app``'s imports of a module of one of the apps ``of``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[0] == app
        for target in targets
        if target.split(".")[0] in of
    )


def services_room_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The circles among a services package and its rooms (its submodules): a room that imports its package, or
    rooms that import each other round."""
    found = []
    for package in sorted(m for m in graph if m.endswith(".services")):
        rooms = {m for m in graph if m.startswith(f"{package}.")} | {package}
        if len(rooms) > 1:
            found += circles({m: graph[m] & rooms for m in sorted(rooms)})
    return found


def test_no_circle_runs_through_a_tasks_module_or_the_job_platform():
    graph = import_graph(production_modules())
    assert {"traces.services", "studio.engine", "exports.services", "webhooks.tasks"} <= set(graph)
    assert job_circles(graph) == []


def test_studio_imports_no_product_app():
    graph = import_graph(production_modules())
    assert "studio.access" in graph and "traces" in {m.split(".")[0] for m in graph}
    assert platform_imports_of_products(graph) == []


def test_traces_imports_no_app_that_reads_or_corrects_traces():
    graph = import_graph(production_modules())
    assert {"traces.views", "traces.admin", "annotation.extensions"} <= set(graph)
    assert "traces.extensions" in graph["annotation.extensions"]  # annotation registers its parts with traces
    assert app_imports(graph, "traces", DOWNSTREAM_OF_TRACES) == []


def test_the_rooms_of_a_services_package_import_each_other_in_no_circle():
    graph = import_graph(production_modules())
    assert {"traces.services.import_shards", "exports.services.assembly", "annotation.services.drafts"} <= set(graph)
    assert "traces.services.trace_import" in graph["traces.services.import_shards"]  # the graph sees the rooms' imports
    assert services_room_circles(graph) == []


def test_the_production_code_imports_in_no_circle():
    graph = import_graph(production_modules())
    assert len(graph) > 200 and "traces.services" in graph["traces.jobs"]
    assert circles(graph) == []


def test_the_checks_find_a_services_tasks_circle_a_platform_import_of_a_product_and_an_app_import(tmp_path):
    # The control: a tree with the faults these rules forbid, written out and read the same way.
    files = {
        "shop/__init__.py": "",
        "shop/services.py": "def order_create():\n    from shop.tasks import send\n    send.delay()\n",
        "shop/tasks.py": "from shop import services\n",
        "studio/__init__.py": "",
        "studio/access.py": "def projects():\n    from shop.models import Project\n",
        "shop/models.py": "",
        # A services package whose rooms import each other round, one of them through the package.
        "cart/__init__.py": "",
        "cart/services/__init__.py": "from cart.services.orders import order_create\n",
        "cart/services/orders.py": "from cart.services.payments import pay\n",
        "cart/services/payments.py": "def pay():\n    from cart.services import order_create\n",
        "cart/services/receipts.py": "from cart.services.orders import order_create\n",
        # An upstream app that reads a downstream one inside a function.
        "shop/views.py": "def page():\n    from cart.services.receipts import order_create\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    graph = import_graph(production_modules(tmp_path))
    assert graph["shop.services"] == {"shop.tasks"} and graph["shop.tasks"] == {"shop.services"}
    assert job_circles(graph) == [["shop.services", "shop.tasks"]]
    assert sorted(circles(graph)) == [
        ["cart.services", "cart.services.orders", "cart.services.payments"],
        ["shop.services", "shop.tasks"],
    ]
    assert platform_imports_of_products(graph) == ["studio.access -> shop.models"]
    assert services_room_circles(graph) == [["cart.services", "cart.services.orders", "cart.services.payments"]]
    assert app_imports(graph, "shop", {"cart"}) == ["shop.views -> cart.services.receipts"]
