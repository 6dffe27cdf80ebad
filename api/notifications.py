"""The API of the notifications: rules (read by everyone signed in, written by admins: the same permissions as the
notifications page) and the delivery log. Writes go through ``handoffs.services.notifications``."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers, viewsets
from rest_framework.permissions import IsAuthenticated

from api.permissions import permission
from api.views import configuration_error
from handoffs import selectors
from handoffs.models import Delivery, NotificationRule
from handoffs.services import notifications


def names(help_text: str):
    return serializers.ListField(child=serializers.CharField(), required=False, help_text=help_text)


class NotificationRuleSerializer(serializers.ModelSerializer):
    outcomes = names("Outcomes that match (empty: any)")
    domains = names("Domains that match (empty: any)")
    subdomains = names("Subdomains that match (empty: any)")
    clusters = names("Cluster names that match (empty: any)")
    recipients = serializers.ListField(child=serializers.EmailField(), required=False,
                                       help_text="E-mail addresses (the e-mail channel)")  # fmt: skip

    class Meta:
        model = NotificationRule
        fields = ["id", *notifications.RULE_FIELDS, "created", "changed"]
        read_only_fields = ["created", "changed"]


class DeliverySerializer(serializers.ModelSerializer):
    rule = serializers.CharField(source="incident.rule.name")
    incident_key = serializers.CharField(source="incident.key")
    events = serializers.IntegerField(source="incident.events")

    class Meta:
        model = Delivery
        fields = ["id", "rule", "incident", "incident_key", "events", "number", "time", "ok", "answer"]


class NotificationRuleViewSet(viewsets.ModelViewSet):
    """Notification rules: when (a trigger and filters), where (a channel; a webhook's URL by reference to an
    environment variable or a file, never the URL itself) and how often (grouping, quiet period)."""

    queryset = selectors.notification_rules()
    serializer_class = NotificationRuleSerializer
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_permissions(self):
        needed = {
            "create": "handoffs.add_notificationrule",
            "update": "handoffs.change_notificationrule",
            "partial_update": "handoffs.change_notificationrule",
            "destroy": "handoffs.delete_notificationrule",
        }.get(self.action)
        return [IsAuthenticated(), *([permission(needed)()] if needed else [])]

    def perform_create(self, serializer):
        self.save(serializer, rule=None)

    def perform_update(self, serializer):
        self.save(serializer, rule=serializer.instance)

    def save(self, serializer, *, rule):
        try:
            serializer.instance = notifications.rule_save(rule=rule, **serializer.validated_data)
        except DjangoValidationError as exc:
            raise configuration_error(exc) from None

    def perform_destroy(self, instance):
        notifications.rule_delete(rule=instance)


class DeliveryViewSet(viewsets.ReadOnlyModelViewSet):
    """The delivery log: each try at sending a notification, newest first."""

    queryset = selectors.delivery_list()
    serializer_class = DeliverySerializer
