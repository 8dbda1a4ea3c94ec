"""No message a person reads from the server is left unmarked for translation.

A refusal's ``detail`` is worded in the language of whoever asked (studio.errors.StudioError): the message given to
one of the studio's error classes (``Invalid``, ``Conflict``, …, and every subclass the apps declare), and to a
``ValidationError`` (DRF's or Django's) raised where a form or a service answers, must be a gettext call
(``gettext``, ``gettext_lazy``, ``ngettext``, ``pgettext``, under whatever name the module imports them, with
``%``, ``.format`` or a join applied to it) or a value made elsewhere (a variable, an argument, ``str(exc)``), never
words written in the call: a plain literal, an f-string, or a concatenation or join holding one. A helper whose
answer becomes such a message is held the same way, by its name: what a function named ``*_problem`` or
``*_refusal`` returns (``language_problem``, ``restore_refusal``: why not, which its caller raises or shows) must be
a gettext call or a value made elsewhere, never words written in the ``return``. The walk reads
every production package; trace_studio_cli, demo and bench are not walked: the command line is a client of the API
with its own English output (docs/architecture.md, "Languages"; the server's refusals it prints arrive already
worded), demo only writes the seed data and bench only measures.
"""

from __future__ import annotations

import ast
import re
import subprocess

from tests.conftest import REPO

STUDIO_ERRORS = {"StudioError", "Invalid", "Conflict", "NotFound", "Forbidden", "TooLarge", "SignedOut"}
# Django's and DRF's ValidationError, where their text reaches a person: a form's or a serializer's answer, a
# service's or an importer's refusal.
VALIDATION_ERROR = "ValidationError"
VALIDATION_ROOMS = re.compile(r"(^|/)(services|selectors|importers|serializers|forms)(/|\.py$)")
TRANSLATING = {"gettext", "gettext_lazy", "ngettext", "ngettext_lazy", "pgettext", "pgettext_lazy", "npgettext"}
MESSAGE_KEYWORDS = {"message", "detail"}
NOT_WALKED = ("tests/", "docs/", "bench/", "demo/", "trace_studio_cli/")

# Messages that stay English on purpose, by file and the error class raised there or the function raising it,
# each with its reason. ScreenAgent's ActionConversionError stays English too (stored on the step: a trace's data
# does not change language with who imported it); it is a ValueError, no studio error, so the walk does not read it
# (the rule test checks it stays one).
ALLOWED: dict[tuple[str, str], str] = {
    ("studio/backup.py", "BackupProblem"): "backup and restore are management commands: an operator reads them on the"
    " command line, which stays English",
    ("studio/services.py", "user_create"): "only the create_user management command calls it: its operator reads the"
    " refusal on the command line, which stays English",
    ("annotation/services/drafts.py", "annotation_seed_demo"): "seeds the demo's data (demo/seed.py), no request's",
    ("studio/checks.py", "static_manifest_problem"): "a system check: the operator reads it when the studio starts",
    ("studio/errortracker.py", "dsn_problem"): "a setting's check: the operator reads it when the studio starts",
    ("studio/oidc_config.py", "issuer_problem"): "a setting's check: the operator reads it when the studio starts",
    ("exports/builders.py", "_dpo_refusal"): "a skip's reason, written into the export's manifest beside its data, in"
    " English as every skip reason of the builders",
    ("traces/grammar.py", "_bounds_problem"): "the action grammar words its checks in English: the import stores them"
    " on the recorded steps as their flags (a trace's data does not change language)",
    ("traces/grammar.py", "box_point_problem"): "the action grammar words its checks in English, as its other checks"
    " (validate_action) that the import stores on the recorded steps",
}

LETTERS = re.compile(r"[A-Za-z]{2,}")


def translating_names(tree: ast.Module) -> set[str]:
    """The names a module calls gettext by: what it imports from django.utils.translation, under its own name or
    another (``gettext as _``, ``gettext as translated``). ``translation.gettext(…)`` is known by its attribute."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "django.utils.translation":
            names.update(alias.asname or alias.name for alias in node.names if alias.name in TRANSLATING)
    return names


def error_classes(trees: dict[str, ast.Module]) -> dict[str, int | None]:
    """Every studio error class by name, with the position of its message among the call's arguments: the studio's
    own (first), and each subclass the modules declare, to a fixed point (a subclass's ``__init__`` that passes one
    of its parameters on as the message moves the position: ``ProjectRefused(field, message)``)."""
    classes: dict[str, int | None] = dict.fromkeys(STUDIO_ERRORS, 0)
    declared = [node for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    grown = True
    while grown:
        grown = False
        for cls in declared:
            if cls.name in classes:
                continue
            bases = [getattr(base, "id", None) or getattr(base, "attr", None) for base in cls.bases]
            inherited = [classes[base] for base in bases if base in classes]
            if inherited:
                classes[cls.name] = message_position(cls, inherited[0])
                grown = True
    return classes


def message_position(cls: ast.ClassDef, inherited: int | None) -> int | None:
    """None for a class that words its message itself (``AccessRefused(action)``: its argument is a name, not words)."""
    for init in (node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__init__"):
        parameters = [arg.arg for arg in init.args.args[1:]]
        for call in (node for node in ast.walk(init) if isinstance(node, ast.Call)):
            if isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" and call.args:
                passed = call.args[0]
                if isinstance(passed, ast.Name) and passed.id in parameters:
                    return parameters.index(passed.id)
                return None
    return inherited


def unmarked(node: ast.expr, translating: set[str]) -> bool:
    """Whether ``node`` writes words into the message instead of taking them from gettext or from a value."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(LETTERS.search(node.value))
    if isinstance(node, ast.JoinedStr):
        return any(unmarked(part, translating) for part in node.values if isinstance(part, ast.Constant))
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mod):  # "…" % values: the template is what is read
            return unmarked(node.left, translating)
        return unmarked(node.left, translating) or unmarked(node.right, translating)
    if isinstance(node, ast.IfExp):
        return unmarked(node.body, translating) or unmarked(node.orelse, translating)
    if isinstance(node, ast.BoolOp):
        return any(unmarked(value, translating) for value in node.values)
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(unmarked(element, translating) for element in node.elts)
    if isinstance(node, ast.Dict):  # a serializer's {field: message}
        return any(unmarked(value, translating) for value in node.values)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in translating:
            return False
        if isinstance(func, ast.Attribute) and func.attr in TRANSLATING:  # translation.gettext(...)
            return False
        if isinstance(func, ast.Attribute):  # "…".format(…), "; ".join(…), gettext(…).format(…)
            return unmarked(func.value, translating) or (
                func.attr == "join" and any(unmarked(arg, translating) for arg in node.args)
            )
        return False  # a value made elsewhere: str(exc), describe_error(exc)
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return unmarked(node.elt, translating)
    return False  # a name, an attribute, a subscript: a value made elsewhere


def message_arguments(call: ast.Call, position: int | None) -> list[ast.expr]:
    found = [call.args[position]] if position is not None and len(call.args) > position else []
    return found + [keyword.value for keyword in call.keywords if keyword.arg in MESSAGE_KEYWORDS]


def unmarked_messages(tree: ast.Module, where: str, classes: dict[str, int | None]) -> list[str]:
    translating = translating_names(tree)
    validation_room = bool(VALIDATION_ROOMS.search(where))
    found = []
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)), key=lambda call: call.lineno)
    raised_in = enclosing_functions(tree)
    for call in calls:
        name = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
        if (where, name) in ALLOWED or (where, raised_in.get(id(call))) in ALLOWED:
            continue
        if name in classes:
            position = classes[name]
        elif name == VALIDATION_ERROR and validation_room:
            position = 0
        else:
            continue
        for argument in message_arguments(call, position):
            if unmarked(argument, translating):
                found.append(f"{where}:{call.lineno}: {ast.unparse(call)[:160]}")
    return found


# A helper that says why something is refused: its answer is the message that the caller raises or shows.
REFUSAL_HELPER = re.compile(r"(^|_)(problem|refusal)$")


def unmarked_helper_answers(tree: ast.Module, where: str) -> list[str]:
    """Each ``return`` of a ``*_problem`` / ``*_refusal`` function that writes words instead of taking them from
    gettext or from a value (``return ""`` and ``return None``, "nothing is wrong", write none)."""
    translating = translating_names(tree)
    found = []
    helpers = (node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    for helper in helpers:
        if not REFUSAL_HELPER.search(helper.name) or (where, helper.name) in ALLOWED:
            continue
        for answer in (node for node in ast.walk(helper) if isinstance(node, ast.Return)):
            if answer.value is not None and unmarked(answer.value, translating):
                found.append(f"{where}:{answer.lineno}: {helper.name}: {ast.unparse(answer)[:160]}")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def enclosing_functions(tree: ast.Module) -> dict[int, str]:
    """The innermost function around each call, by the call's id()."""
    around: dict[int, str] = {}
    for function in (node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))):
        around.update((id(node), function.name) for node in ast.walk(function) if isinstance(node, ast.Call))
    return around


def production_modules() -> dict[str, ast.Module]:
    listing = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    paths = [
        path
        for path in listing.stdout.split()
        if "/" in path and not path.startswith(NOT_WALKED) and "/migrations/" not in path
    ]
    return {path: ast.parse((REPO / path).read_text(encoding="utf-8")) for path in paths}


def test_every_message_a_person_reads_from_the_server_is_marked_for_translation():
    trees = production_modules()
    assert {path.split("/")[0] for path in trees} >= {
        "annotation",
        "evaluation",
        "exports",
        "insights",
        "prescoring",
        "replays",
        "studio",
        "traces",
        "webhooks",
    }, sorted(trees)
    classes = error_classes(trees)
    assert {"ProjectRefused", "StaleVersion", "SignInRefused", "UnknownFormat"} <= set(classes), sorted(classes)
    assert "ActionConversionError" not in classes  # stored on the step, in English: see ALLOWED
    found = [line for path, tree in trees.items() for line in unmarked_messages(tree, path, classes)]
    assert found == [], "mark the message for translation (gettext) and add its zh_Hans entry:\n" + "\n".join(found)


def test_every_refusal_a_helper_words_is_marked_for_translation():
    trees = production_modules()
    helpers = {node.name for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    # The helpers whose words reach a person through a caller's refusal: the walk finds them by their names.
    assert {"input_problem", "language_problem", "registration_refusal", "restore_refusal"} <= {
        name for name in helpers if REFUSAL_HELPER.search(name)
    }
    found = [line for path, tree in trees.items() for line in unmarked_helper_answers(tree, path)]
    assert found == [], "return a gettext call (and add its zh_Hans entry):\n" + "\n".join(found)


def test_every_allowed_exception_still_exists():
    """An entry naming nothing its module holds any more is stale: it would let a later class or function of that
    name through unseen."""
    trees = production_modules()
    for path, name in ALLOWED:
        named = {getattr(node, "name", None) for node in ast.walk(trees[path])}
        assert name in named, (path, name)


CONTROL = """
from django.utils.translation import gettext as _, gettext_lazy, ngettext
from rest_framework import serializers
from studio.errors import Conflict, Invalid


class Refused(Invalid):
    pass


class FieldRefused(Refused):
    def __init__(self, field, message):
        super().__init__(message, field=field)


def refusals(name, count, exc, problems):
    raise Invalid("no such round")                                     # 1 literal
    raise Conflict(f"round {name!r} is closed")                        # 2 f-string
    raise Refused("round: " + name)                                    # 3 concatenation
    raise FieldRefused("round", "a name is required")                  # 4 the subclass's message
    raise Invalid(detail="the round is closed")                        # 5 keyword
    raise serializers.ValidationError({"name": "required"})            # 6 a serializer's field message
    raise Invalid("{} is closed".format(name))                         # 7 format on a literal
    raise Invalid("; ".join(["closed", name]))                         # 8 a join holding words
    raise Invalid("no round" if count else _("no rounds"))            # 9 one branch unmarked
    raise Invalid(_("no such round"))
    raise Conflict(_("round %(name)s is closed") % {"name": name})
    raise Refused(gettext_lazy("a name is required"))
    raise FieldRefused("round", _("a name is required"))
    raise Invalid(ngettext("%(n)s round", "%(n)s rounds", count) % {"n": count})
    raise Invalid(_("{} is closed").format(name))
    raise Invalid("; ".join(str(p) for p in problems))
    raise Invalid(f"{name}: {exc}")
    raise Invalid(str(exc), field="round")
    raise serializers.ValidationError({"name": _("required")})
"""


def test_control_the_walk_finds_each_unmarked_message_and_lets_the_marked_ones_be():
    classes = error_classes({"control.py": ast.parse(CONTROL)})
    assert classes["FieldRefused"] == 1
    found = unmarked_messages(ast.parse(CONTROL), "app/services.py", classes)
    assert [int(line.split("# ")[-1].split()[0]) for line in _lines(found)] == list(range(1, 10)), found
    # Outside the rooms where a ValidationError answers a person, the walk does not read it.
    assert len(unmarked_messages(ast.parse(CONTROL), "app/checks.py", classes)) == 8


def _lines(found: list[str]) -> list[str]:
    lines = CONTROL.splitlines()
    return [lines[int(line.split(":")[1]) - 1] for line in found]


CONTROL_HELPERS = """
from django.utils.translation import gettext as _


def name_problem(name):
    if not name:
        return "a name is required"                                    # 1 literal
    if len(name) > 9:
        return f"{name} is too long"                                   # 2 f-string
    if name.isdigit():
        return "a name: " + name                                       # 3 concatenation
    if name.startswith("-"):
        return (400, "a name starts with a letter")                    # 4 a status and words
    if name.isupper():
        return _("%(name)s is in capitals") % {"name": name}
    if name.islower():
        return str(name)
    return ""


def _refusal(host):
    return None if host else "no host"                                 # 5 one branch unmarked


def description(name):
    return "a name"
"""


def test_control_the_walk_finds_each_helper_that_words_a_refusal_itself():
    found = unmarked_helper_answers(ast.parse(CONTROL_HELPERS), "app/services.py")
    lines = CONTROL_HELPERS.splitlines()
    marks = [int(lines[int(line.split(":")[1]) - 1].split("# ")[-1].split()[0]) for line in found]
    assert marks == list(range(1, 6)), found
    # A helper named in ALLOWED is not read: its words stay English on purpose.
    allowed = CONTROL_HELPERS.replace("def _refusal(", "def box_point_problem(")
    assert len(unmarked_helper_answers(ast.parse(allowed), "traces/grammar.py")) == 4
