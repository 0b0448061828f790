"""The README's examples take effect in the node, and its tables and links hold (the README and every
docs/*.md, so an example is tested wherever it is moved; each code block's own check, YAML, bash commands and
``ros2`` messages included, is test_doc_code_blocks.py's): the streaming section's commands, sent in order
to a running ik_controller (the shipped panda.yaml less the self-collision barrier, for speed), take effect:
the topic exists with that type, the goal or stream arrives and nothing is rejected, services succeed,
parameters are set. Also: every streaming and goal-smoothing key has a configuration-table row with its real
default, every ``ControllerStatus`` motion-limit code and mode is documented, every runtime parameter is
listed, every relative link and anchor resolves.

There is no ``ros2`` CLI here: the commands are parsed with shlex and their YAML payload is set on the
message as ``ros2 topic pub`` does (rosidl_runtime_py's set_message_fields: nested mappings, sequences,
``stamp: now`` and ``header: auto``), by a small recursion over the message's field types
(rosidl_runtime_py is not a wheel here)."""

from __future__ import annotations

import dataclasses
import importlib
import re
import shlex
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from roboplan_ik_ros.core.control.goal_followers import GoalSmoothingConfig
from roboplan_ik_ros.core.control.twist_follower import StreamingConfig
from roboplan_ik_ros.node.node_config import load_node_config

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README = "\n".join(p.read_text() for p in DOC_FILES)  # the README and docs/*.md, one text: examples, tables, sections
CONFIG_DIR = ROOT / "roboplan_ik_ros" / "config"
PANDA = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
NODE_NAME = "ik_controller"  # the executable's default node name, and the launch file's
STREAMING_HEADING = "### Streaming inputs"
STREAM_TIMEOUT = 10.0  # [s] for a streamed example to take effect in the node (seconds of margin on a busy machine)


# ------------------------------------------------------------------------------------------ README parsing
def fenced_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def section(text: str, heading: str) -> str:
    """The text from the line starting with ``heading`` to the next heading of the same or a higher level
    (outside code blocks: a bash comment is no heading)."""
    level = len(heading) - len(heading.lstrip("#"))
    out, inside, fenced = [], False, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        is_heading = not fenced and re.match(rf"#{{1,{level}}} ", line)
        if inside and is_heading:
            break
        inside = inside or line.startswith(heading)
        if inside:
            out.append(line)
    assert out, f"README: no section {heading!r}"
    return "\n".join(out) + "\n"


def ros2_commands(text: str) -> list[list[str]]:
    """Every ``ros2 ...`` command of the bash blocks (continuations joined, comments dropped), as argv."""
    commands = []
    for block in fenced_blocks(text, "bash"):
        pending = ""  # lines of a quoted argument that spans lines
        for line in block.replace("\\\n", " ").splitlines():
            pending += line + "\n"
            try:
                argv = shlex.split(pending, comments=True)
            except ValueError:  # no closing quotation yet
                continue
            pending = ""
            if argv[:1] == ["ros2"]:
                commands.append(argv)
        assert not pending, f"unterminated quote in a README bash block: {pending!r}"
    return commands


def pub_parts(argv: list[str]) -> tuple[str, str, str, float]:
    """(topic, type, payload, rate [Hz]; 0 = once) of ``ros2 topic pub [options] topic type [payload]``."""
    args, rate, k = argv[3:], 1.0, 0
    positional = []
    while k < len(args):
        if args[k] in ("-r", "--rate"):
            rate, k = float(args[k + 1]), k + 2
        elif args[k] in ("-1", "--once"):
            rate, k = 0.0, k + 1
        elif args[k] in ("-t", "--times", "-p", "--print", "-n", "--node-name", "-w", "--wait-matching-subscriptions"):
            k += 2
        else:
            positional.append(args[k])
            k += 1
    topic, type_name, *payload = positional
    return topic, type_name, payload[0] if payload else "{}", rate


# ------------------------------------------------------------------------------------------ messages
def interface_class(type_name: str, kind: str = "msg"):
    """``pkg/msg/Type`` (or ``pkg/Type``) -> the generated class."""
    parts = type_name.split("/")
    package, name = parts[0], parts[-1]
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


def _element_type(field_type: str) -> str:
    """The element type of ``sequence<T>``, ``sequence<T, N>``, ``T[N]``; the type itself otherwise."""
    m = re.fullmatch(r"sequence<([^,>]+)(?:, *\d+)?>", field_type) or re.fullmatch(r"([^\[]+)\[\d*\]", field_type)
    return m.group(1) if m else field_type


def _is_sequence(field_type: str) -> bool:
    return field_type.startswith("sequence<") or field_type.endswith("]")


def _now_msg():
    from builtin_interfaces.msg import Time

    ns = time.time_ns()
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def _value(field_type: str, value, path: str, clock):
    if "/" in field_type:  # a nested message
        cls = interface_class(field_type)
        if field_type in ("builtin_interfaces/Time",) and value == "now":
            return clock()
        if field_type == "std_msgs/Header" and value == "auto":
            from std_msgs.msg import Header

            return Header(stamp=clock())
        assert isinstance(value, dict), f"{path}: expected a mapping for {field_type}, got {value!r}"
        return fill_message(cls(), value, path, clock)
    if field_type in ("double", "float", "float32", "float64") and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def fill_message(msg, values: dict, path: str = "", clock=_now_msg):
    """Set ``values`` (a YAML mapping) on ``msg`` as ``ros2 topic pub`` does; an unknown field fails,
    naming it. ``stamp: now`` and ``header: auto`` take ``clock()``."""
    types = msg.get_fields_and_field_types()
    for key, value in values.items():
        where = f"{path}.{key}" if path else key
        assert key in types, f"{where}: no such field in {type(msg).__module__}.{type(msg).__name__}; " \
                             f"fields: {sorted(types)}"
        field_type = types[key]
        if _is_sequence(field_type):
            assert isinstance(value, list), f"{where}: expected a list, got {value!r}"
            element = _element_type(field_type)
            value = [_value(element, v, f"{where}[{i}]", clock) for i, v in enumerate(value)]
        else:
            value = _value(field_type, value, where, clock)
        setattr(msg, key, value)  # the generated setter checks the type and range
    return msg


# ------------------------------------------------------------------------------------------ links
def _anchors(text: str) -> set[str]:
    """The ids GitHub gives the headings of ``text`` (lower case, punctuation but ``-`` and ``_`` dropped,
    spaces to ``-``)."""
    out, fenced = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = not fenced and re.match(r"#{1,6} +(.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(path):
    """The README and docs/ link to each other (the README's sections moved to docs/): every relative link
    names a file that exists, and its ``#anchor`` a heading of that file."""
    text = path.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.exists(), f"{path.name}: link {target}: no such file"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest.read_text()), f"{path.name}: link {target}: no such heading in {dest.name}"


# ------------------------------------------------------------------------------------------ the YAML
def test_readme_streaming_yaml_block_is_complete_and_matches_panda_yaml():
    """The streaming section's YAML names every node.streaming key, with panda.yaml's values ("with
    panda.yaml's values", it says)."""
    blocks = [yaml.safe_load(b) for b in fenced_blocks(section(README, STREAMING_HEADING), "yaml")]
    streaming = next(b["node"]["streaming"] for b in blocks if "streaming" in b.get("node", {}))
    assert set(streaming) == {f.name for f in dataclasses.fields(StreamingConfig)}
    assert streaming == PANDA["node"]["streaming"]


def _table_defaults(text: str, prefix: str) -> dict[str, str]:
    """``key -> default`` of the table rows whose first cell names ``prefix...`` keys (one row may name
    several: `` `node.x.a`, `b` `` with defaults `` `1`, `2` ``)."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith(f"`{prefix}"):
            continue
        keys = re.findall(r"`([^`]+)`", cells[0])
        first = keys[0].rsplit(".", 1)[0]
        keys = [k if "." in k else f"{first}.{k}" for k in keys]
        defaults = re.findall(r"`([^`]+)`", cells[1])
        assert len(defaults) == len(keys), f"README row {cells[0]}: {len(keys)} keys, {len(defaults)} defaults"
        out.update(zip(keys, defaults))
    return out


@pytest.mark.parametrize("prefix, cls", [("node.streaming.", StreamingConfig),
                                         ("node.goal_smoothing.", GoalSmoothingConfig)])
def test_every_key_has_a_table_row_with_its_real_default(prefix, cls):
    documented = _table_defaults(README, prefix)
    for f in dataclasses.fields(cls):
        key = prefix + f.name
        assert key in documented, f"README: no configuration-table row for {key}"
        assert yaml.safe_load(documented[key]) == f.default, \
            f"README: {key} default {documented[key]}, the code's {f.default!r}"
    assert set(documented) <= {prefix + f.name for f in dataclasses.fields(cls)}, "README documents unknown keys"


def test_every_motion_limit_code_and_mode_is_documented():
    from roboplan_ik_interfaces.msg import ControllerStatus

    codes = {v for k, v in vars(ControllerStatus).items() if k.startswith("MOTION_LIMIT_")}
    modes = {v for k, v in vars(ControllerStatus).items() if k.startswith("MODE_")}
    stream = section(README, STREAMING_HEADING)
    rows = {c.strip('"') for c in re.findall(r'^ *\| `([a-z_]+|"")` \|', stream, flags=re.M)}
    assert codes <= rows, f"motion_limit codes without a row: {sorted(codes - rows)}"
    start = README.index("`~/status.mode` says")
    mode_line = README[start:README.index("\n- ", start)]
    assert all(f"`{m}`" in mode_line for m in modes), f"modes missing from: {mode_line}"
    for key in ("motion_limit", "motion_limit_reason", "stream_timeouts"):
        assert f"`{key}`" in README or f"`~/status.{key}`" in README


def test_every_runtime_parameter_is_listed():
    """The README's list of runtime parameters is the one the node: declarations give (generated), and each name
    in it is a parameter the node declares for the shipped config."""
    from docs_tables import README, RUNTIME_BEGIN, RUNTIME_END, generated_readme
    from roboplan_ik_ros.node.parameters import loop_specs

    text = README.read_text(encoding="utf-8")
    assert text == generated_readme(text), "README's runtime parameter list is stale: run scripts/docs_tables.py --write"
    node_cfg = load_node_config(PANDA["node"])
    names = [s.name for s in loop_specs(node_cfg, lambda v: None, lambda v: None, lambda v: None)]
    listed = text[text.index(RUNTIME_BEGIN) + len(RUNTIME_BEGIN):text.index(RUNTIME_END)]
    assert sorted(f"`{n}`" for n in names) == sorted(listed.replace(",", " ").split())


# ------------------------------------------------------------------------------------------ commands
def test_readme_has_an_example_for_every_streaming_input():
    stream = ros2_commands(section(README, STREAMING_HEADING))
    topics = {pub_parts(a)[0].rsplit("/", 1)[-1] for a in stream if a[1:3] == ["topic", "pub"]}
    assert {"target_twist", "target_pose", "target_joints", "target_joint_velocities", "joint_jog"} <= topics
    services = {a[3].rsplit("/", 1)[-1] for a in stream if a[1:3] == ["service", "call"]}
    assert {"pause", "apply_configured_targets"} <= services
    params = {a[4] for a in stream if a[1:3] == ["param", "set"]}
    assert {"streaming.speed_override", "streaming.command_in_type", "streaming.max_linear_speed",
            "streaming.max_angular_speed", "streaming.command_timeout"} <= params


def _control_msgs_missing(type_name: str) -> bool:
    if not type_name.startswith("control_msgs/"):
        return False
    try:
        importlib.import_module("control_msgs.msg")
        return False
    except ImportError:
        return True


# ------------------------------------------------------------------------------------------ against the node
@pytest.fixture(scope="module")
def controller(ros, mock_robot, tmp_path_factory):
    from lifecycle_msgs.msg import Transition
    from rclpy.parameter import Parameter

    from conftest import LifecycleClient, Spinner, unique_name, write_config
    from roboplan_ik_ros.node.ik_controller import IKControllerNode

    name = unique_name("ik")
    node = IKControllerNode(name, parameter_overrides=[
        Parameter("config_file", value=write_config(tmp_path_factory.mktemp("readme")))])
    spinner = Spinner(node)
    client = LifecycleClient(name)
    assert client.transition(Transition.TRANSITION_CONFIGURE)
    assert client.transition(Transition.TRANSITION_ACTIVATE)
    yield node, client
    client.close()
    spinner.stop()
    node.destroy_node()


def _wait_rest(node):
    """Until the loop is not streaming any more (the stream timed out) and holds still."""
    from conftest import wait_until

    wait_until(lambda: not node.loop.streaming and not node.loop.paused, timeout=10.0, what="streams to end")


def test_streaming_examples_are_accepted_by_the_node(controller):
    """Each command of the streaming section, in the README's order, against a running controller named
    as the launch file names it (the test's node has a unique name: ``/ik_controller/`` is replaced)."""
    from conftest import wait_until
    from roboplan_ik_ros.node.ik_controller import IKControllerNode

    node, client = controller
    assert IKControllerNode.__init__.__defaults__[0] == NODE_NAME
    launch = (ROOT / "roboplan_ik_ros" / "launch" / "ik_controller.launch.py").read_text()
    assert f'executable="ik_controller", name="{NODE_NAME}"' in launch
    me = client.node
    name = node.get_name()
    ran, unchecked = [], []
    reasons: list[str] = []  # every rejection's text, as the node notes it
    note = node._note_rejection
    node._note_rejection = lambda text: (reasons.append(text), note(text))
    for argv in ros2_commands(section(README, STREAMING_HEADING)):
        verb = argv[1:3]
        target = pub_parts(argv)[0] if verb == ["topic", "pub"] else argv[3]
        assert target.startswith(f"/{NODE_NAME}"), f"{' '.join(argv)}: not addressed to /{NODE_NAME}"
        target = f"/{name}" + target[len(NODE_NAME) + 1:]
        rejected = node.loop.counts.goals_rejected
        if verb == ["topic", "pub"]:
            _, type_name, payload, rate = pub_parts(argv)
            if _control_msgs_missing(type_name):  # no PyPI wheel: said as a skip once the others have run
                unchecked.append(f"{target} ({type_name}): control_msgs is not installed here")
                continue
            subs = dict(me.get_subscriber_names_and_types_by_node(name, "/"))
            assert subs.get(target) == [type_name], f"{' '.join(argv)}: the node subscribes {target} as " \
                                                    f"{subs.get(target)}"
            cls = interface_class(type_name)
            pub = me.create_publisher(cls, target, 10)
            wait_until(lambda: pub.get_subscription_count() > 0, what=f"{target} matched")
            values = yaml.safe_load(payload)
            task, kind = target.split("/")[-2:]
            # --once: one message; -r: the stream at its rate, re-stamped as ros2 does, until the node follows it
            # (a generous timeout: the node is slow to react on a busy machine, never wrong)
            streamed, deadline = False, time.monotonic() + STREAM_TIMEOUT
            pub.publish(fill_message(cls(), values))
            while rate and not streamed and time.monotonic() < deadline:
                time.sleep(1.0 / rate)
                pub.publish(fill_message(cls(), values))
                streamed = node.loop.streaming
            me.destroy_publisher(pub)
            # the message arrived and took effect (not merely "nothing was rejected yet")
            if kind in ("target_twist", "target_joint_velocities"):
                assert streamed, f"{' '.join(argv)}: the node never streamed; rejected: {node._last_rejection}"
            elif kind == "target_pose":
                p = values["pose"]["position"]
                wait_until(lambda: np.allclose(node.loop.goal(task).translation, [p["x"], p["y"], p["z"]]),
                           what=f"the goal of {argv[-1]}; rejected: {node._last_rejection}")
            elif kind == "target_joints":
                k = [node.group.joint_names.index(n) for n in values["name"]]
                wait_until(lambda: np.allclose(node.loop.goal(task)[k], values["position"]),
                           what=f"the goal of {argv[-1]}; rejected: {node._last_rejection}")
            else:
                pytest.fail(f"no effect check for {target}")
            # nothing refused but a stamped stream message that waited > command_timeout to be read (a busy machine:
            # the node rightly drops it and follows the next ones)
            refused = reasons[len(reasons) - (node.loop.counts.goals_rejected - rejected):] \
                if node.loop.counts.goals_rejected > rejected else []
            late = [r for r in refused if "old on arrival" in r and kind in ("target_twist", "target_joint_velocities")]
            assert refused == late, f"{' '.join(argv)}: rejected: {[r for r in refused if r not in late]}"
            _wait_rest(node)
        elif verb == ["service", "call"]:
            cls = interface_class(argv[4], "srv")
            cli = me.create_client(cls, target)
            assert cli.wait_for_service(timeout_sec=10.0), f"no service {target}"
            from conftest import wait_future

            response = wait_future(cli.call_async(fill_message(cls.Request(), yaml.safe_load(argv[5]) if len(argv) > 5
                                                               else {})))
            assert response.success, f"{' '.join(argv)}: {response.message}"
            me.destroy_client(cli)
            if argv[5:] == ["{data: true}"]:
                assert node.loop.paused
            if argv[5:] == ["{data: false}"]:  # resume: at rest, waiting for a new input
                wait_until(lambda: node.loop.mode == "waiting_for_goal", what="resumed")
        elif verb == ["param", "set"]:
            result = client.set_parameter(argv[4], yaml.safe_load(argv[5]))
            assert result.successful, f"{' '.join(argv)}: {result.reason}"
            section_name, key = argv[4].split(".")
            assert getattr(getattr(node.node_cfg, section_name), key) == yaml.safe_load(argv[5])
        elif verb == ["topic", "echo"]:
            from roboplan_ik_interfaces.msg import ControllerStatus

            pubs = dict(me.get_publisher_names_and_types_by_node(name, "/"))
            assert target in pubs, f"{target} is not published; published: {sorted(pubs)}"
            if "--field" in argv:
                assert argv[argv.index("--field") + 1] in ControllerStatus.get_fields_and_field_types()
        else:
            pytest.fail(f"unexpected command {' '.join(argv)}")
        ran.append(" ".join(argv[1:4]))
    assert len(ran) >= 10, ran
    if unchecked:
        pytest.skip(f"{len(ran)} commands ran and took effect; not run here: {'; '.join(unchecked)}")
