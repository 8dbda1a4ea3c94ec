"""An API view names its rule once: ``permission_action`` declares the action, and the view's ``access_*`` calls
take it by default (``access_project(request, pk)``, studio.access.requester). A call that names the view's own
action again is a second copy of the rule that a change of the declaration would leave behind. A call naming another
action (a second check, a narrower read) stays explicit."""

from __future__ import annotations

import ast
import subprocess

from tests.conftest import REPO

HANDLERS = {"get", "post", "put", "patch", "delete"}


def declared_action(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> str | dict | None:
    """The class's ``permission_action``, its own or inherited from a view class of the same module."""
    for node in cls.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "permission_action" for t in node.targets):
            return ast.literal_eval(node.value)
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id != cls.name:
            found = declared_action(classes[base.id], classes)
            if found is not None:
                return found
    return None


def action_of(declared: str | dict, method: str) -> str | None:
    """The action a method of the view runs under: a handler, its HTTP method's; any other method (a helper, a
    queryset), the one action of a view that declares one, else unknown."""
    if isinstance(declared, str):
        return declared
    if method in HANDLERS:
        return declared.get(method.upper(), declared.get("*"))
    return None


def repeated_actions(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found = []
    for cls in classes.values():
        declared = declared_action(cls, classes)
        if declared is None:
            continue
        for method in (node for node in cls.body if isinstance(node, ast.FunctionDef)):
            action = action_of(declared, method.name)
            for call in (node for node in ast.walk(method) if isinstance(node, ast.Call)):
                name = getattr(call.func, "id", None) or getattr(call.func, "attr", "")
                if not name.startswith("access") or len(call.args) < 3:
                    continue
                named = call.args[2]
                if (isinstance(named, ast.Constant) and named.value == action) or (
                    ast.unparse(named) == "self.permission_action"
                ):
                    found.append(f"{where}:{call.lineno}: {cls.name}.{method.name}: {ast.unparse(call)}")
    return found


def view_modules() -> list[str]:
    listing = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return [
        path
        for path in listing.stdout.split()
        if not path.startswith(("tests/", "docs/")) and "permission_action" in (REPO / path).read_text()
    ]


def test_no_access_call_repeats_its_views_declared_action():
    modules = view_modules()
    assert len(modules) >= 8, modules
    found = [line for path in modules for line in repeated_actions((REPO / path).read_text(), path)]
    assert found == [], "pass the request and let the view's declared action be the default:\n" + "\n".join(found)


CONTROL = """
class Base(APIView):
    permission_action = "slice.view"

    def slice(self, pk):
        return access_slice(self.request.user, pk, "slice.view")


class Detail(Base):
    permission_action = {"GET": "slice.view", "DELETE": "slice.manage"}

    def get(self, request, pk):
        access_trace(request.user, pk, "trace.view")  # another action: stays
        return access_slice(request.user, pk, "slice.view")

    def delete(self, request, pk):
        return access_slice(request, pk)


class Lead(APIView):
    permission_action = "annotation.review"

    def project(self, pk):
        return access_project(self.request.user, pk, self.permission_action)
"""


def test_control_the_rule_finds_a_repeated_action_and_lets_another_one_be():
    found = repeated_actions(CONTROL, "control.py")
    assert [line.split(": ")[1] for line in found] == ["Base.slice", "Detail.get", "Lead.project"], found
