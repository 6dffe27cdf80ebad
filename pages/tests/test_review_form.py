"""The review form's node select writes the markup Django's own multiple select writes (it only skips the template
include per option)."""

import pytest
from django import forms

from pages.forms import NodeSelect, ReviewForm


@pytest.mark.parametrize("value", [None, [], ["node<2>"], ["node01", "node<2>"]])
def test_the_node_select_writes_what_djangos_select_writes(value):
    choices = [("node01", "node01"), ("node<2>", "node<2>"), ('n"3', 'n"3')]
    ours, django = NodeSelect(attrs={"size": 6}), forms.SelectMultiple(attrs={"size": 6})
    ours.choices = django.choices = choices
    attrs = {"id": "id_corrected_nodes"}

    assert ours.render("corrected_nodes", value, attrs) == django.render("corrected_nodes", value, attrs)


def test_the_review_form_offers_the_attempts_nodes_and_keeps_a_choice():
    form = ReviewForm({"verdict": "corrected", "corrected_nodes": ["b"]}, nodes=["a", "b"])

    html = str(form["corrected_nodes"])

    assert '<option value="a">a</option>' in html
    assert '<option value="b" selected>b</option>' in html
    assert html.startswith('<select name="corrected_nodes" size="6" id="id_corrected_nodes" multiple>')
