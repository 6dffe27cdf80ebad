"""The review form of the attempt page: confirm, correct (within the taxonomy) or mark insufficient evidence. The
rules a review must keep are the review service's (``diagnoses/services/reviews.py``), the same for the API; the
form offers only what they allow: the subdomains of the chosen domain, the nodes of the attempt."""

from django import forms
from django.urls import reverse
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import mark_safe

from diagnoses.models import Diagnosis, Review
from diagnoses.services.reviews import CORRECTIONS
from engine.taxonomy import DOMAINS

NONE = [("", "(none)")]
VERDICTS = [
    (Review.Verdict.CONFIRMED, "Confirm the diagnosis"),
    (Review.Verdict.CORRECTED, "Correct it"),
    (Review.Verdict.INSUFFICIENT_EVIDENCE, "Insufficient evidence to tell"),
]


def subdomain_choices(domain: str) -> list:
    """The subdomains a correction in ``domain`` may name (every domain's, grouped, when none is chosen)."""
    if domain in DOMAINS:
        return NONE + [(s, s) for s in DOMAINS[domain]]
    return NONE + [(name, [(s, s) for s in subdomains]) for name, subdomains in DOMAINS.items()]


SELECTED = {True: " selected", False: ""}


class NodeSelect(forms.SelectMultiple):
    """Django's multiple select of flat choices (the attempt's nodes), its options written here rather than through
    one template include each: the same markup, in a few milliseconds instead of 35 for the 1,024 nodes of a large
    attempt (docs/performance.md, "Pages")."""

    def render(self, name, value, attrs=None, renderer=None):
        chosen = set(self.format_value(value))
        attrs = {**self.build_attrs(self.attrs, attrs), "multiple": True}
        options = "".join(
            f'\n  <option value="{escape(choice)}"{SELECTED[str(choice) in chosen]}>{escape(label)}</option>\n'
            for choice, label in self.choices
        )
        return format_html('<select name="{}"{}>{}\n</select>', name, _attributes(attrs), mark_safe(options))


def _attributes(attrs: dict) -> str:
    """HTML attributes in their order, as Django's ``django/forms/widgets/attrs.html`` writes them."""
    return format_html_join(
        "", "{}", ((format_html(" {}", name) if value is True else format_html(' {}="{}"', name, value),)
                   for name, value in attrs.items() if value is not False)
    )  # fmt: skip


class ReviewForm(forms.Form):
    verdict = forms.ChoiceField(choices=VERDICTS, widget=forms.RadioSelect, label="Verdict")
    corrected_outcome = forms.ChoiceField(choices=NONE + Diagnosis.Outcome.choices, required=False, label="Outcome")
    corrected_domain = forms.ChoiceField(choices=NONE + [(d, d) for d in DOMAINS], required=False, label="Domain")
    # any subdomain of the taxonomy is read; the review service refuses one of another domain, with the reason
    corrected_subdomain = forms.ChoiceField(choices=subdomain_choices(""), required=False, label="Subdomain")
    corrected_nodes = forms.MultipleChoiceField(
        choices=[], required=False, label="Root-cause nodes", widget=NodeSelect(attrs={"size": 6})
    )
    note = forms.CharField(required=False, label="Note", widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, nodes: list[str], **kwargs):
        """``nodes``: the attempt's nodes, the only ones a correction may name."""
        super().__init__(*args, **kwargs)
        self.fields["corrected_nodes"].choices = [(name, name) for name in nodes]
        domain = self["corrected_domain"].value() or ""
        # shown: the chosen domain's subdomains only (htmx swaps them in when the domain changes)
        self.fields["corrected_subdomain"].widget.choices = subdomain_choices(domain)
        self.fields["corrected_domain"].widget.attrs.update(
            {
                "hx-get": reverse("pages:review-subdomains"),
                "hx-target": "#id_corrected_subdomain",
                "hx-swap": "outerHTML",
            }
        )

    def clean(self):
        data = super().clean()
        if data.get("verdict") != Review.Verdict.CORRECTED:
            # the correction fields only count for a correction; whatever else was sent is dropped
            return {**data, **{name: [] if name == "corrected_nodes" else "" for name in CORRECTIONS}}
        return data
