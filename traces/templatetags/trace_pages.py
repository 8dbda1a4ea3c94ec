"""`{% fragment part %}`: what another app registered for a trace page (traces.extensions.Fragment), rendered inside
the page's context (its request, user and CSRF token) with the fragment's own context on top."""

from django import template

from traces.extensions import Fragment

register = template.Library()


@register.simple_tag(takes_context=True)
def fragment(context, part: Fragment):
    with context.push(part.context):
        return context.template.engine.get_template(part.template).render(context)
