"""The ``node:`` section's reference table (docs/configuration.md) against the keys the code declares.

Every key of the section is declared once, in its dataclass (core/control/loop_config.py and the config
dataclasses it holds, node/node_config.py): default, range or choices, its meaning (``doc``, the row's text) and
whether it is a runtime parameter. The YAML check, the ranges the objects and the runtime parameters read, the
parameters themselves (their description: the doc) and the docs table come from that declaration: the table is
generated (core/key_table.py, ``scripts/docs_tables.py --write``), and this test fails until the file holds the
generated one. The file's rows are also read back as a user reads them: every declared key has a row with its
default as a YAML value, and no row names a key the code does not have. (The ranges' edges are probed from the
rows by test_parameter_range_edges.py.)"""

from __future__ import annotations

import dataclasses

from docs_tables import documented_defaults, table_difference
from roboplan_ik_ros.core.keys import plain_text, runtime_fields
from roboplan_ik_ros.core.control.loop_config import LoopConfig
from roboplan_ik_ros.node.node_config import NodeConfig, OutputConfig
from roboplan_ik_ros.node.parameters import loop_specs


def declared_defaults(config: type = NodeConfig, prefix: str = "node.") -> dict[str, object]:
    """``node.<key>`` -> the declared default of every key of the section (nested sections by their dotted
    path, the outputs' keys as ``node.outputs[].<key>``)."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(config):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        name = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(default):
            out.update(declared_defaults(type(default), f"{name}."))
        elif f.name == "outputs":
            out.update(declared_defaults(OutputConfig, f"{name}[]."))
        else:
            out[name] = default
    return out


def test_the_node_table_in_the_docs_is_the_one_generated_from_the_declarations():
    difference = table_difference("node")
    assert not difference, difference


def test_every_declared_node_key_has_a_row_and_every_row_a_declared_key():
    documented, declared = set(documented_defaults()), set(declared_defaults())
    assert not declared - documented, f"declared but not in docs/configuration.md: {sorted(declared - documented)}"
    assert not documented - declared, f"in docs/configuration.md but not declared: {sorted(documented - declared)}"


def test_each_rows_default_is_the_declared_default():
    documented = documented_defaults()
    wrong = {k: (documented[k], v) for k, v in declared_defaults().items() if k in documented and documented[k] != v}
    assert not wrong, f"docs default != declared default: {wrong}"


def test_the_runtime_parameters_are_the_keys_declared_runtime_with_their_values():
    """The node's loop parameters (what ``ros2 param list`` shows once configured) are exactly the keys declared
    with a runtime description, each with its configured value and its declared range in its description."""
    cfg = NodeConfig()
    specs = {s.name: s for s in loop_specs(cfg, lambda v: None, lambda v: None, lambda v: None)}
    assert list(specs) == [name for name, _ in runtime_fields(LoopConfig)]
    for name, f in runtime_fields(cfg):
        owner = cfg
        for section in name.split(".")[:-1]:
            owner = getattr(owner, section)
        assert specs[name].value == getattr(owner, name.split(".")[-1])
        rng = f.metadata.get("range")
        if rng is not None:
            assert rng.describe() in specs[name].descriptor.description, name
        else:
            assert specs[name].validate("no such value") != "", f"{name}: a value outside its choices was accepted"


def test_each_runtime_parameter_is_described_by_its_keys_doc():
    """The description ``ros2 param describe`` shows is the key's doc (its docs row's text, as plain text), then
    for a number its range: one text, written once in the declaration."""
    cfg = NodeConfig()
    specs = {s.name: s for s in loop_specs(cfg, lambda v: None, lambda v: None, lambda v: None)}
    for name, f in runtime_fields(cfg):
        description = specs[name].descriptor.description
        assert f.metadata["doc"], f"{name}: a runtime parameter without a doc"
        assert description.startswith(plain_text(f.metadata["doc"])), f"{name}: {description!r}"
        assert "`" not in description, f"{name}: markdown in the description: {description!r}"
