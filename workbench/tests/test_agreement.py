"""Agreement of diagnoses with reviews: accuracy by outcome, root-cause node precision, false attributions."""

from workbench.agreement import changed, differences, summarise


def document(outcome, domain=None, subdomain=None, nodes=(), rule="r"):
    root = {"rule": rule, "nodes": list(nodes)} if outcome == "attributed" else None
    return {"outcome": outcome, "domain": domain, "subdomain": subdomain, "root_cause": root}


def expect(outcome, domain=None, subdomain=None, nodes=()):
    return {"outcome": outcome, "domain": domain, "subdomain": subdomain, "nodes": list(nodes)}


def test_a_diagnosis_that_agrees_has_no_differences():
    bus = ("attributed", "hardware", "gpu.bus", ["n2"])
    assert differences(expect(*bus), document(*bus)) == []
    assert differences(expect("unattributed"), document("unattributed")) == []


def test_differences_name_each_part():
    expected = expect("attributed", "hardware", "gpu.bus", ["n2"])
    found = differences(expected, document("attributed", "hardware", "gpu.nvlink", ["n3"]))

    assert found == ["subdomain: expected gpu.bus, got gpu.nvlink", "nodes: expected n2, got n3"]
    assert differences(expect("attributed", "hardware", "gpu.bus"), document("unattributed")) == [
        "outcome: expected attributed, got unattributed",
        "domain: expected hardware, got -",
        "subdomain: expected gpu.bus, got -",
    ]


def test_a_change_is_any_difference_in_outcome_classification_rule_or_nodes():
    before = document("attributed", "hardware", "gpu.bus", ["n2"])

    assert not changed(before, document("attributed", "hardware", "gpu.bus", ["n2"]))
    assert changed(before, document("attributed", "hardware", "gpu.bus", ["n2"], rule="other"))
    assert changed(before, document("attributed", "hardware", "gpu.bus", ["n3"]))
    assert changed(None, before)


def test_the_summary_counts_accuracy_by_outcome_node_precision_and_false_attributions():
    pairs = [
        (expect("attributed", "hardware", "gpu.bus", ["n1"]), document("attributed", "hardware", "gpu.bus", ["n1", "n2"])),  # noqa: E501
        (expect("attributed", "hardware", "gpu.thermal", ["n4"]), document("unattributed")),
        (expect("unattributed"), document("attributed", "network", "switch", [])),
        (expect("unattributed"), document("unattributed")),
        (expect("attributed", "storage", "filesystem", []), document("attributed", "hardware", "gpu.memory", ["n3"])),
    ]  # fmt: skip

    summary = summarise(pairs)

    assert (summary["total"], summary["correct"], summary["accuracy"]) == (5, 2, 0.4)
    assert summary["by_outcome"]["attributed"] == {"total": 3, "correct": 1, "accuracy": 0.3333}
    assert summary["by_outcome"]["unattributed"] == {"total": 2, "correct": 1, "accuracy": 0.5}
    assert summary["by_outcome"]["ambiguous"]["accuracy"] is None
    # nodes named by attributions that were expected: n1 (right), n2 (wrong), n3 (wrong)
    assert (summary["nodes_named"], summary["node_precision"]) == (3, 0.3333)
    # attributed where unattributed was expected, and attributed to another classification
    assert summary["false_attributions"] == 2


def test_an_empty_summary_has_no_ratios():
    summary = summarise([])

    assert (summary["accuracy"], summary["node_precision"], summary["false_attributions"]) == (None, None, 0)
