"""`{{ n|in_words:"trace,traces" }}`: studio.words.in_words asked from a template, so a page's counts follow the one
singular/plural rule ("1 trace") instead of a hard-coded plural ("1 traces"), in the page's language: each pair a
page counts has its phrase here, where the catalog finds it."""

from django import template
from django.utils.translation import ngettext_lazy

from studio import words

register = template.Library()

PHRASES = {
    "trace,traces": ngettext_lazy("%(count)s trace", "%(count)s traces", "count"),
    "step,steps": ngettext_lazy("%(count)s step", "%(count)s steps", "count"),
    "gold trace,gold traces": ngettext_lazy("%(count)s gold trace", "%(count)s gold traces", "count"),
    "accepted annotation,accepted annotations": ngettext_lazy(
        "%(count)s accepted annotation", "%(count)s accepted annotations", "count"
    ),
}


@register.filter
def in_words(count: int, names: str) -> str:
    if names in PHRASES:
        return PHRASES[names] % {"count": int(count)}
    singular, plural = names.split(",")
    return words.in_words(int(count), singular, plural)
