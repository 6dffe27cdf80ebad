"""What the browser tests share: signing a page in at the live server, and typing into a rule editor."""

import re

from playwright.sync_api import Page, expect

# The whole text of the page's rule editor (CodeMirror, over the text area it keeps in step), as typing would set it.
SET_TEXT = "text => document.querySelector('.CodeMirror').CodeMirror.setValue(text)"


def sign_in(page: Page, live_server, username: str, password: str) -> None:
    """Open the site, land on the login form, sign in and see the overview."""
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
