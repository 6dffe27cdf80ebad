"""The hand-offs' pages: notification rules with their incidents and delivery log (admins edit the rules), and drains
(triagers propose, admins approve or reject, resume, and set each cluster's drain policy). Every action is a POST
that calls a ``handoffs`` service and comes back to the page it was made from."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from diagnoses.models import Attempt, Cluster, Node
from handoffs import selectors
from handoffs.channels import DeliveryError
from handoffs.models import Drain, DrainPolicy, NotificationRule
from handoffs.services import drains, notifications

PROPOSE = "handoffs.add_drain"
APPROVE = "handoffs.approve_drain"
RESUME = "handoffs.resume_drain"
CONFIGURE_DRAINS = "handoffs.change_drainpolicy"
CONFIGURE_RULES = "handoffs.change_notificationrule"


class ListField(forms.CharField):
    """A list of names typed as one line, separated by commas."""

    def to_python(self, value):
        return [item.strip() for item in (value or "").split(",") if item.strip()]

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value


class RuleForm(forms.ModelForm):
    outcomes = ListField(required=False, help_text="Outcomes that match, comma-separated (empty: any)")
    domains = ListField(required=False, help_text="Domains that match (empty: any)")
    subdomains = ListField(required=False, help_text="Subdomains that match (empty: any)")
    clusters = ListField(required=False, help_text="Clusters that match (empty: any)")
    recipients = ListField(required=False, help_text="E-mail addresses (the e-mail channel)")

    class Meta:
        model = NotificationRule
        fields = notifications.RULE_FIELDS


class ProposeForm(forms.Form):
    node = forms.ModelChoiceField(queryset=Node.objects.select_related("cluster"))
    attempt = forms.ModelChoiceField(queryset=Attempt.objects.only("pk"), required=False)
    reason = forms.CharField(max_length=180)


class PolicyForm(forms.ModelForm):
    class Meta:
        model = DrainPolicy
        fields = drains.POLICY_FIELDS


def _back(request, fallback: str):
    """Back to the page the form was on (``next``, this site only), else ``fallback``."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(fallback)


def _refused(request, error: ValidationError) -> None:
    messages.error(request, " ".join(error.messages))


# Notifications ---------------------------------------------------------------------------------------------------


@login_required
@require_GET
def notification_list(request):
    may_configure = request.user.has_perm(CONFIGURE_RULES)
    return render(request, "pages/handoffs/notifications.html", _notifications_context(request, may_configure))


def _notifications_context(request, may_configure: bool, form: RuleForm | None = None,
                           edited: RuleForm | None = None) -> dict:  # fmt: skip
    """The page's context; ``form`` the new rule's form, ``edited`` a rule's form with its errors."""

    def edit_form(rule):
        if not may_configure:
            return None
        if edited is not None and edited.instance.pk == rule.pk:
            return edited
        return RuleForm(instance=rule, prefix=f"rule{rule.pk}")

    return {
        "rows": [(rule, edit_form(rule)) for rule in selectors.notification_rules()],
        "incidents": selectors.incidents_recent(),
        "deliveries": selectors.deliveries_recent(),
        "may_configure": may_configure,
        "form": form or (RuleForm() if may_configure else None),
        "editing": edited.instance.pk if edited is not None else None,
    }


@login_required
@require_POST
def notification_rule_save(request, pk: int | None = None):
    if not request.user.has_perm(CONFIGURE_RULES):
        raise PermissionDenied("only admins configure notifications")
    rule = get_object_or_404(NotificationRule, pk=pk) if pk else None
    form = RuleForm(request.POST, instance=rule, prefix=f"rule{pk}" if pk else None)
    if form.is_valid():
        try:
            saved = notifications.rule_save(rule=rule, **{name: form.cleaned_data[name] for name in form.fields})
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"Notification rule {saved.name} saved.")
            return redirect("pages:notification-list")
    context = _notifications_context(request, True, None if pk else form, form if pk else None)
    return render(request, "pages/handoffs/notifications.html", context, status=400)


@login_required
@require_POST
def notification_rule_test(request, pk: int):
    """Send the rule's test message now; its endpoint's answer (or why it failed) is the page's message."""
    if not request.user.has_perm(CONFIGURE_RULES):
        raise PermissionDenied("only admins configure notifications")
    rule = get_object_or_404(NotificationRule, pk=pk)
    try:
        answer = notifications.rule_test(rule=rule, user=request.user)
    except DeliveryError as exc:
        messages.error(request, f"The test message of {rule.name} failed: {exc}")
    else:
        messages.success(request, f"Test message of {rule.name} sent: {answer}")
    return redirect(reverse("pages:notification-list") + f"#rule-{rule.pk}")


@login_required
@require_POST
def notification_rule_delete(request, pk: int):
    if not request.user.has_perm("handoffs.delete_notificationrule"):
        raise PermissionDenied("only admins configure notifications")
    rule = get_object_or_404(NotificationRule, pk=pk)
    notifications.rule_delete(rule=rule)
    messages.success(request, f"Notification rule {rule.name} deleted.")
    return redirect("pages:notification-list")


# Drains ----------------------------------------------------------------------------------------------------------


@login_required
@require_GET
def drain_list(request):
    policies = selectors.drain_policies()
    context = {
        "waiting": selectors.drains_waiting(),
        "holding": selectors.drains_holding(),
        "history": selectors.drains_history(),
        "policies": policies,
        "demo_clusters": [policy.cluster.name for policy in policies if policy.cluster.has_demo_scheduler],
        "may_approve": request.user.has_perm(APPROVE),
        "may_resume": request.user.has_perm(RESUME),
        "may_configure": request.user.has_perm(CONFIGURE_DRAINS),
    }
    return render(request, "pages/handoffs/drains.html", context)


@login_required
@require_POST
def drain_propose(request):
    if not request.user.has_perm(PROPOSE):
        raise PermissionDenied("only triagers propose drains")
    form = ProposeForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Proposing a drain needs the node and a reason.")
    else:
        node = form.cleaned_data["node"]
        try:
            drains.drain_propose(node=node, reason=form.cleaned_data["reason"], user=request.user,
                                 attempt=form.cleaned_data["attempt"])  # fmt: skip
            messages.success(request, f"Draining {node.name} proposed; an admin approves it.")
        except ValidationError as exc:
            _refused(request, exc)
    return _back(request, reverse("pages:drain-list"))


def _drain_action(request, pk: int, permission: str, action, done: str):
    if not request.user.has_perm(permission):
        raise PermissionDenied("only admins approve, reject and resume drains")
    drain = get_object_or_404(Drain.objects.select_related("node"), pk=pk)
    try:
        action(drain=drain, user=request.user)
        messages.success(request, f"{drain.node.name}: {done}.")
    except ValidationError as exc:
        _refused(request, exc)
    return _back(request, reverse("pages:drain-list"))


@login_required
@require_POST
def drain_approve(request, pk: int):
    return _drain_action(request, pk, APPROVE, drains.drain_approve, "drain approved, its command queued")


@login_required
@require_POST
def drain_reject(request, pk: int):
    return _drain_action(request, pk, APPROVE, drains.drain_reject, "drain rejected")


@login_required
@require_POST
def drain_resume(request, pk: int):
    return _drain_action(request, pk, RESUME, drains.drain_resume, "resumed")


@login_required
@require_POST
def drain_policy(request, cluster: str):
    if not request.user.has_perm(CONFIGURE_DRAINS):
        raise PermissionDenied("only admins set drain policies")
    cluster = Cluster.objects.filter(name=cluster).first()
    if cluster is None:
        raise Http404("no such cluster")
    form = PolicyForm(request.POST, instance=selectors.drain_policy_of(cluster))
    if form.is_valid():
        drains.drain_policy_set(cluster=cluster, user=request.user, **form.cleaned_data)
        messages.success(request, f"Drain policy of {cluster.name} saved.")
    else:
        messages.error(request, f"Drain policy of {cluster.name} not saved: {form.errors.as_text()}")
    return redirect(reverse("pages:drain-list") + "#policies")
