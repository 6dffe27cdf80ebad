"""The taxonomy's helpers: a subdomain of a domain (dot-prefixes included), and which causes lie on a node."""

import pytest

from engine.taxonomy import DOMAINS, NODE_LEVEL, node_level, subdomain_known


def test_the_node_level_causes_are_subdomains_of_the_taxonomy():
    for domain, subdomains in NODE_LEVEL.items():
        assert all(subdomain_known(domain, subdomain) for subdomain in subdomains), domain


@pytest.mark.parametrize(
    ("domain", "subdomain", "on_a_node"),
    [
        ("hardware", "gpu.bus", True),
        ("hardware", "gpu.memory.hbm", True),  # a rule author's subdomain under a node-level one
        ("network", "link.infiniband", True),
        ("network", "switch", False),  # many nodes at once
        ("storage", "filesystem", False),
        ("scheduler", "time_limit", False),
        ("infrastructure", "node_lost", True),
        ("infrastructure", "maintenance", False),
        ("software", "driver", True),
        ("software", "nccl", False),
        ("weather", "gpu.bus", False),
    ],
)
def test_a_cause_lies_on_a_node_by_its_domain_and_subdomain(domain, subdomain, on_a_node):
    assert node_level(domain, subdomain) is on_a_node


def test_a_subdomain_belongs_to_its_own_domain_only():
    assert subdomain_known("hardware", "gpu.memory")
    assert not subdomain_known("network", "gpu.memory")
    assert not any(subdomain_known(domain, "gpu.memory") for domain in DOMAINS if domain != "hardware")
