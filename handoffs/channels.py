"""Where a notification goes: a generic webhook (the JSON body of docs/handoffs.md), a Slack-compatible incoming
webhook (``{"text": ...}``) or e-mail through Django's mail settings.

A webhook's URL is a secret read when sending, from the environment variable or the file the rule names (the
cluster settings' ``token_env``/``token_file`` mechanism: ``connectors.settings_reader.Settings.secret``). A failure is
a ``DeliveryError``; ``permanent`` when trying again cannot help (no URL, a 4xx other than 408 and 429).

Deliveries are at-least-once: a try whose answer was lost (a timeout) is made again. Each carries the message's
idempotency key in the ``Idempotency-Key`` header and in its body (``idempotency_key``; for e-mail, the header and a
last line), for the receiver to deduplicate on.
"""

from __future__ import annotations

import requests
from django.conf import settings
from django.core.mail import EmailMessage

from connectors.settings_reader import SettingError, Settings
from handoffs.models import NotificationRule

Channel = NotificationRule.Channel
RETRIED_STATUSES = frozenset({408, 429})
IDEMPOTENCY_HEADER = "Idempotency-Key"


class DeliveryError(Exception):
    def __init__(self, message: str, *, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


def rule_url(rule: NotificationRule) -> str:
    """The rule's webhook URL from its secret reference (``DeliveryError``, permanent, when it cannot be had)."""
    values = {key: value for key, value in (("url_env", rule.url_env), ("url_file", rule.url_file)) if value}
    try:
        url = Settings(f"rule {rule.name}", values).secret("url")
    except SettingError as exc:
        raise DeliveryError(str(exc), permanent=True) from None
    if not url or not url.startswith(("http://", "https://")):
        raise DeliveryError(f"rule {rule.name}: the webhook URL must start with http:// or https://", permanent=True)
    return url


def send(rule: NotificationRule, message: dict) -> str:
    """Send the message through the rule's channel; what the endpoint answered."""
    key = message["idempotency_key"]
    if rule.channel == Channel.EMAIL:
        text = f"{text_of(message)}\n\nIdempotency key: {key}"
        mail = EmailMessage(
            message["summary"][:200], text, None, list(rule.recipients), headers={IDEMPOTENCY_HEADER: key}
        )
        try:
            sent = mail.send()
        except OSError as exc:  # smtplib's errors are OSErrors: the mail server may be back later
            raise DeliveryError(f"e-mail: {type(exc).__name__}: {exc}") from None
        return f"e-mail to {sent and len(rule.recipients)} recipient(s)"
    body = message if rule.channel == Channel.WEBHOOK else {"text": text_of(message), "idempotency_key": key}
    url = rule_url(rule)
    try:
        response = requests.post(
            url, json=body, headers={IDEMPOTENCY_HEADER: key}, timeout=settings.FAULTLINE_NOTIFICATION_TIMEOUT
        )
    except requests.RequestException as exc:
        raise DeliveryError(f"request failed: {type(exc).__name__}") from None  # the URL (a secret) is left out
    answer = f"HTTP {response.status_code} {response.text[:200]}".strip()
    if response.status_code >= 400:
        permanent = response.status_code < 500 and response.status_code not in RETRIED_STATUSES
        raise DeliveryError(answer, permanent=permanent)
    return answer


def text_of(message: dict) -> str:
    """The message as text (Slack and e-mail): the summary, a line per item, the link."""
    lines = [message["summary"]]
    for item in message["items"]:
        lines.append(f"- {item['text']}: {item['url']}")
    if message["items_omitted"]:
        lines.append(f"- and {message['items_omitted']} more")
    lines.append(message["incident"]["url"])
    return "\n".join(lines)
