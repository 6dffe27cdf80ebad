"""The one way the HTML apps answer htmx requests.

A page's template defines each part that htmx swaps as a partial (``{% partialdef name inline %}``,
django-template-partials) named after the element id that htmx targets. ``render_page`` renders that
partial alone when an htmx request targets it, and the whole page otherwise (a history restore, a
bookmark, a request without JavaScript); ``render_partial`` answers the requests that only ever want a
part (a form checked as it is typed, the lines around a piece of evidence). Every answer varies on
``HX-Request``.
"""

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.http import HttpResponseClientRefresh, HttpResponseStopPolling, push_url


def partial_requested(request: HttpRequest, target: str) -> bool:
    """Whether this is an htmx request for the element ``target`` alone (a history restore wants the page)."""
    htmx = request.htmx
    return bool(htmx) and htmx.target == target and not htmx.history_restore_request


def render_page(
    request: HttpRequest,
    template: str,
    context: dict,
    *,
    partials: tuple[str, ...] = (),
    push: bool = False,
    stop_polling: bool = False,
    status: int = 200,
) -> HttpResponse:
    """The page ``template``, or the one of its ``partials`` that an htmx request targets.

    ``push``: a partial tells htmx the page's canonical URL (empty parameters left out), so that filters
    and pages live in the address bar. ``stop_polling``: a polled partial answers 286, which htmx swaps
    in and then stops polling."""
    target = next((name for name in partials if partial_requested(request, name)), None)
    if target is None:
        response = render(request, template, context, status=status)
    else:
        response = render(request, f"{template}#{target}", context, status=status)
        if stop_polling:
            response = HttpResponseStopPolling(response.content)
        if push:
            response = push_url(response, canonical_url(request))
    patch_vary_headers(response, ["HX-Request"])
    return response


def render_partial(request: HttpRequest, template: str, partial: str, context: dict, *, status: int = 200):
    """The partial ``partial`` of ``template`` alone: the answer to a request that only ever wants a part."""
    response = render(request, f"{template}#{partial}", context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def refresh_page() -> HttpResponse:
    """Tell htmx to load the whole page again: the answer to a polled part whose wait is over."""
    response = HttpResponseClientRefresh()
    patch_vary_headers(response, ["HX-Request"])
    return response


def canonical_url(request: HttpRequest) -> str:
    """This page's URL with the empty query parameters left out (what a person shares)."""
    query = urlencode([(key, value) for key, value in request.GET.items() if value])
    return f"{request.path}?{query}" if query else request.path
