"""The triage pages, one module per page or family: ``overview``, ``lists`` (the job list and the triage
queue), ``exports`` (the job list as CSV or JSON), ``attempts`` (an attempt's page and its actions), ``nodes`` (the
node inventory and a node's page), ``search`` (the header's search) and ``clusters``. Thin views: reads through the
selectors (``pages.selectors``, ``diagnoses.selectors``, ``handoffs.selectors``), writes through the services, htmx
answered by ``web.htmx``. Every page needs a login."""


def cursor(request) -> dict:
    """The seek pagination cursor of a list page (``pages.paging``)."""
    return {"after": request.GET.get("after", ""), "before": request.GET.get("before", "")}
