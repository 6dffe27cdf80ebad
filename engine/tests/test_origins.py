"""The origin of a cascade from its structure: the peers the other nodes' errors name (docs/rules.md, "Origins")."""

from engine.node_names import NodeNames
from engine.origins import resolve
from engine.tests.bundles import diagnose_bundle, write_bundle

NODES = ["node01", "node02", "node03", "node04"]


def bootstrap(node: str, address: str) -> str:
    return f"{node}:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:{address}<0>"


def lost(node: str, peer: str, second: int = 0) -> str:
    return (
        f"{node}:4242:4301 [0] misc/socket.cc:49 NCCL WARN socketProgressOpt: Call to recv from {peer} failed :"
        f" Connection reset by peer (second {second})"
    )


def diagnose(tmp_path, lines, **attempt) -> dict:
    start = [bootstrap(node, f"10.0.0.{i}") for i, node in enumerate(NODES, 1)]
    return diagnose_bundle(write_bundle(tmp_path, logs={"train.log": [*start, *lines]}, nodes=NODES, **attempt))


def test_the_node_every_other_node_lost_is_named_the_likely_origin_never_attributed(tmp_path):
    result = diagnose(tmp_path, [lost("node01", "10.0.0.3<51234>"), lost("node02", "10.0.0.3<51234>"),
                                 lost("node04", "10.0.0.3<40112>")])  # fmt: skip
    assert result["outcome"] == "ambiguous"
    assert {node for c in result["candidates"] for node in c["nodes"]} == {"node03"}
    assert {(c["domain"], c["subdomain"]) for c in result["candidates"]} == {
        ("infrastructure", "node_lost"), ("hardware", "gpu"), ("application", "exception"),
    }  # fmt: skip
    assert all(c["nominated"] for c in result["candidates"])
    assert result["candidates"][0]["summary"].startswith("The errors of 3 node(s) (node01, node02, node04) point at")


def test_a_cause_the_named_node_logged_itself_is_the_root(tmp_path):
    ecc = "2026-11-02 10:00:00,000 RuntimeError: CUDA error: uncorrectable ECC error encountered"
    start = [bootstrap(node, f"10.0.0.{i}") for i, node in enumerate(NODES, 1)]
    logs = {
        "train.log": [*start, lost("node01", "10.0.0.3<1>"), lost("node02", "10.0.0.3<1>")],
        "node03/train.log": [ecc],
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, nodes=NODES))
    assert result["outcome"] == "attributed"
    assert (result["subdomain"], result["root_cause"]["nodes"]) == ("gpu.memory", ["node03"])


def test_two_nodes_naming_each_other_are_no_single_origin(tmp_path):
    result = diagnose(tmp_path, [lost("node01", "10.0.0.2<1>"), lost("node02", "10.0.0.1<2>")])
    assert result["outcome"] == "unattributed"
    assert result["candidates"] == []


def test_one_reporter_is_not_enough_where_more_could_have_reported(tmp_path):
    assert diagnose(tmp_path, [lost("node01", "10.0.0.3<51234>")])["outcome"] == "unattributed"


def test_on_two_nodes_the_one_other_node_suffices(tmp_path):
    lines = [bootstrap("node01", "10.0.0.1"), bootstrap("node02", "10.0.0.2"), lost("node01", "10.0.0.2<9>")]
    result = diagnose_bundle(write_bundle(tmp_path, logs={"train.log": lines}, nodes=["node01", "node02"]))
    assert result["outcome"] == "ambiguous"
    assert {node for c in result["candidates"] for node in c["nodes"]} == {"node02"}


def test_gloo_peers_count_too(tmp_path):
    lines = [
        f"[rank{r}]:[E1102 10:00:0{r}.000000 pair.cc:534] [../third_party/gloo/gloo/transport/tcp/pair.cc:534]"
        " Connection closed by peer [10.0.0.4]:31567"
        for r in range(3)
    ]
    result = diagnose(tmp_path, lines, ranks={"0": "node01", "1": "node02", "2": "node03"})
    assert {node for c in result["candidates"] for node in c["nodes"]} == {"node04"}


def test_peers_are_resolved_by_name_address_or_a_name_that_spells_the_address():
    nodes = NodeNames(("gpu-7.cluster", "ip-10-8-7-234", "node01"))
    book = {"10.0.0.1": "node01"}
    assert resolve("gpu-7<45678>", nodes, book) == "gpu-7.cluster"
    assert resolve("[10.0.0.1]:31567", nodes, book) == "node01"
    assert resolve("10.8.7.234<34567>", nodes, book) == "ip-10-8-7-234"
    assert resolve("10.9.9.9<1>", nodes, book) is None
    assert resolve("fe80::1%eth0<2>", nodes, {"fe80::1": "node01"}) == "node01"


def agent(node: str, second: int, exitcode: int, local_rank: int = 0) -> str:
    return (
        f"E1102 10:{second // 60:02d}:{second % 60:02d}.000000 4242 torch/distributed/elastic/multiprocessing/"
        f"api.py:869] failed (exitcode: {exitcode}) local_rank: {local_rank} (pid: {4000 + second})"
        " of binary: /usr/bin/python"
    )


def test_the_node_whose_worker_failed_first_by_a_clear_margin_is_named(tmp_path):
    logs = {
        "node02/torchrun.log": [agent("node02", 5, -9, 3)],
        "node01/torchrun.log": [agent("node01", 610, -6)],
        "node03/torchrun.log": [agent("node03", 612, -15)],
    }
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, nodes=NODES))
    assert result["outcome"] == "ambiguous"
    assert {node for c in result["candidates"] for node in c["nodes"]} == {"node02"}
    assert result["candidates"][0]["summary"] == (
        "A worker on node02 failed first (exit code -9, local rank 3), and no other node's worker failed but for the"
        " teardown"
    )


def test_failures_close_together_name_no_first_node(tmp_path):
    logs = {"node02/torchrun.log": [agent("node02", 5, 1)], "node01/torchrun.log": [agent("node01", 30, 1)]}
    assert diagnose_bundle(write_bundle(tmp_path, logs=logs, nodes=NODES))["outcome"] == "unattributed"


def test_watchdog_aborts_and_teardown_exits_do_not_count_as_the_first_failure(tmp_path):
    logs = {"node02/torchrun.log": [agent("node02", 5, -6)], "node01/torchrun.log": [agent("node01", 300, -15)]}
    assert diagnose_bundle(write_bundle(tmp_path, logs=logs, nodes=NODES))["outcome"] == "unattributed"


def test_the_margin_is_measured_to_the_next_nodes_own_failure(tmp_path):
    logs = {"node02/torchrun.log": [agent("node02", 5, 1)], "node01/torchrun.log": [agent("node01", 700, -9)]}
    result = diagnose_bundle(write_bundle(tmp_path, logs=logs, nodes=NODES))
    assert result["candidates"][0]["summary"].endswith("695 s before the next node's")
    assert {node for c in result["candidates"] for node in c["nodes"]} == {"node02"}
