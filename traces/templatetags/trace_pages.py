"""`{% fragment part %}`: what another app registered for a trace page (traces.extensions.Fragment), rendered inside
the page's context (its request, user and CSRF token) with the fragment's own context on top. `{% lang_of trace %}`:
the ``lang`` attribute of an element holding the trace's own text (its instruction, thoughts, corrections)."""

from django import template
from django.utils.html import format_html

from traces.extensions import Fragment

register = template.Library()


@register.simple_tag(takes_context=True)
def fragment(context, part: Fragment):
    with context.push(part.context):
        return context.template.engine.get_template(part.template).render(context)


@register.simple_tag
def lang_of(trace) -> str:
    """` lang="zh"` for a trace whose language is known (traces.languages), else nothing: the page's own language.
    ``trace``: a trace, or what a page shows of one (a dict with its ``language``, the search's step cards)."""
    language = trace.get("language", "") if isinstance(trace, dict) else getattr(trace, "language", "")
    return format_html(' lang="{}"', language) if language else ""
