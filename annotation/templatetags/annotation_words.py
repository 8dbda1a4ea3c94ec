from django import template

from annotation.selectors import verdict_words as _verdict_words

register = template.Library()


@register.filter
def verdict_words(answer) -> str:
    """An annotation's (or an annotation row's) verdict in words: annotation.selectors.verdict_words."""
    if isinstance(answer, dict):
        return _verdict_words(answer.get("verdict") or "", answer.get("tau"))
    return _verdict_words(answer.verdict, answer.tau)
