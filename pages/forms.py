"""The review form of the attempt page: confirm, correct (within the taxonomy) or mark insufficient evidence."""

from django import forms

from diagnoses.models import Diagnosis, Review
from engine.taxonomy import DOMAINS, subdomain_known

NONE = [("", "(none)")]
VERDICTS = [
    (Review.Verdict.CONFIRMED, "Confirm the diagnosis"),
    (Review.Verdict.CORRECTED, "Correct it"),
    (Review.Verdict.INSUFFICIENT_EVIDENCE, "Insufficient evidence to tell"),
]
CORRECTIONS = ("corrected_outcome", "corrected_domain", "corrected_subdomain", "corrected_nodes")


class ReviewForm(forms.Form):
    verdict = forms.ChoiceField(choices=VERDICTS, widget=forms.RadioSelect, label="Verdict")
    corrected_outcome = forms.ChoiceField(choices=NONE + Diagnosis.Outcome.choices, required=False, label="Outcome")
    corrected_domain = forms.ChoiceField(choices=NONE + [(d, d) for d in DOMAINS], required=False, label="Domain")
    corrected_subdomain = forms.ChoiceField(
        choices=NONE + [(domain, [(s, s) for s in subdomains]) for domain, subdomains in DOMAINS.items()],
        required=False,
        label="Subdomain",
    )
    corrected_nodes = forms.MultipleChoiceField(
        choices=[], required=False, label="Root-cause nodes", widget=forms.SelectMultiple(attrs={"size": 6})
    )
    note = forms.CharField(required=False, label="Note", widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args, nodes: list[str], **kwargs):
        """``nodes``: the attempt's nodes, the only ones a correction may name."""
        super().__init__(*args, **kwargs)
        self.fields["corrected_nodes"].choices = [(name, name) for name in nodes]

    def clean(self):
        data = super().clean()
        if data.get("verdict") != Review.Verdict.CORRECTED:
            # the correction fields only count for a correction; whatever else was sent is dropped
            return {**data, **{name: [] if name == "corrected_nodes" else "" for name in CORRECTIONS}}
        outcome = data.get("corrected_outcome")
        domain, subdomain = data.get("corrected_domain"), data.get("corrected_subdomain")
        if not outcome:
            self.add_error("corrected_outcome", "A correction names the corrected outcome.")
        elif outcome == Diagnosis.Outcome.ATTRIBUTED:
            if not domain:
                self.add_error("corrected_domain", "An attributed outcome names its domain.")
            if not subdomain:
                self.add_error("corrected_subdomain", "An attributed outcome names its subdomain.")
            elif domain and not subdomain_known(domain, subdomain):
                self.add_error("corrected_subdomain", f"{subdomain} is not a subdomain of {domain}.")
        elif outcome == Diagnosis.Outcome.UNATTRIBUTED and (domain or subdomain or data.get("corrected_nodes")):
            self.add_error("corrected_outcome", "An unattributed outcome has no domain, subdomain or root-cause nodes.")
        elif outcome == Diagnosis.Outcome.AMBIGUOUS and subdomain:
            self.add_error("corrected_subdomain", "An ambiguous outcome has no single subdomain.")
        return data
