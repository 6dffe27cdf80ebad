"""The error pages are the site's: its layout, a heading that says what happened, and a way back."""

from django.test import Client

from access.roles import VIEWER


def test_not_found_and_not_allowed_pages_are_in_the_site_layout(client_for, settings):
    settings.DEBUG = False
    client = client_for(VIEWER)
    missing = client.get("/attempts/987654321/")
    refused = client.get("/rules/sets/default/edit")
    assert missing.status_code == 404
    assert '<h1 id="error-heading">Not found</h1>' in missing.content.decode()
    assert refused.status_code == 403
    assert '<h1 id="error-heading">Not allowed</h1>' in refused.content.decode()
    for page in (missing, refused):
        assert '<nav aria-label="Main">' in page.content.decode()  # signed in: the site's navigation


def test_a_form_sent_without_its_token_gets_the_site_page(db, settings):
    settings.DEBUG = False
    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "a", "password": "b"})
    assert response.status_code == 403
    assert '<h1 id="error-heading">This form has expired</h1>' in response.content.decode()
    assert '<a class="brand" href="/">Faultline</a>' in response.content.decode()
