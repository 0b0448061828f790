"""Every fenced code block of README.md and docs/*.md is checked (a doc test), so an example cannot rot.

- ``python``: run as written, each block alone, in a fresh interpreter (``python -c``) from the repository
  root; it must exit 0.
- ``bash``: every command it names must exist, without running long things: ``make`` targets and the
  variables set on the line are the Makefile's (the options in ``make demo ARGS=...`` are the demo's, by its
  ``--help``), console scripts are declared in setup.py and every ``--ros-args -p name:=value`` is a
  parameter the node declares, ``python -m`` modules import, sourced files and config paths exist,
  ``ros2 topic pub`` / ``service call`` payloads build the real message, ``ros2 param set`` names a runtime
  parameter, ``ros2 launch`` names the package's launch file and its declared arguments, ``pip install``
  names pinned requirements; the tools of a ROS install (colcon, rosdep) and the shell's own are named.
- ``yaml``: parses with PyYAML; a config fragment (its top-level keys are the config's sections) is merged
  into the shipped panda.yaml and loads through the core's checks (``parse_config``, the loop keys of
  ``node:`` by ``load_loop_config``) and the node's (``load_node_config``).
- ``text`` and unlabelled blocks are output and tables, not code: not run. Any other language fails (no
  check exists for it).

A block that cannot be checked here is marked in the Markdown on the line before it with
``<!-- doc-test: skip (why) -->``: it shows as a skipped test with that reason, and a marker without a
reason (or that marks no block) fails. The node-level checks of the streaming section's commands (sent to a
running ik_controller) are in test_readme_examples.py.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from roboplan_ik_ros.core.config import IKConfig, parse_config
from roboplan_ik_ros.core.control.loop_from_config import load_loop_config
from roboplan_ik_ros.node.node_config import load_node_config
from test_readme_examples import fill_message, interface_class, pub_parts

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "roboplan_ik_ros"
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONFIG_DIR = PACKAGE / "config"
CHECKED = ("python", "bash", "yaml")
NOT_CODE = ("", "text")  # command output, tables, a directory tree
MARKER = re.compile(r"<!--\s*doc-test:\s*skip\b\s*(?:\((.*)\))?\s*-->")
PYTHON_TIMEOUT = 600.0  # [s] generous: a block runs in seconds; this only ends a hung one
# commands of a ROS 2 install from apt (README "Install on a real ROS 2 system"): not on this machine
ROS_INSTALL_TOOLS = ("colcon", "rosdep")
SHELL_BUILTINS = ("cd", "source", ".", "export")
COLCON_OUTPUTS = ("install/setup.bash",)  # files `colcon build` makes in a workspace


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    skip: str | None  # None: not marked; "": marked without a reason; else the reason

    @property
    def where(self) -> str:
        name = self.path.relative_to(ROOT).as_posix() if self.path.is_relative_to(ROOT) else self.path.name
        return f"{name}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the skip marker on the (non-blank) line before each."""
    lines = path.read_text().splitlines()
    out, k = [], 0
    while k < len(lines):
        m = re.match(r"^(```+)\s*([\w+-]*)", lines[k])
        if not m:
            k += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), k
        end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith(fence)), None)
        assert end is not None, f"{path.name}:{k + 1}: unclosed code fence"
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(prev.strip())  # a line of its own (the marker quoted in prose is no marker)
        skip = None if marker is None else (marker.group(1) or "").strip()
        out.append(Block(path, start + 1, lang, "\n".join(lines[start + 1:end]) + "\n", skip))
        k = end + 1
    return out


BLOCKS = [b for p in DOC_FILES for b in code_blocks(p)]


def _blocks(lang: str) -> list:
    return [pytest.param(b, id=b.where) for b in BLOCKS if b.lang == lang]


def _skip_if_marked(block: Block) -> None:
    if block.skip is None:
        return
    assert block.skip, f"{block.where}: marked doc-test: skip without a reason; write <!-- doc-test: skip (why) -->"
    pytest.skip(f"{block.where}: {block.skip}")


def test_every_block_has_a_checked_language():
    """Every block is Python, bash or YAML (checked below) or output/table text; the counts are printed."""
    unknown = [f"{b.where} ```{b.lang}" for b in BLOCKS if b.lang not in (*CHECKED, *NOT_CODE)]
    assert not unknown, f"code blocks of a language no test checks: {unknown}"
    counts = {lang: sum(b.lang == lang for b in BLOCKS) for lang in (*CHECKED, *NOT_CODE)}
    skipped = [f"{b.where}: {b.skip}" for b in BLOCKS if b.skip is not None]
    print(f"doc code blocks: {counts}; marked skip: {len(skipped)} {skipped}")
    assert counts["python"] and counts["bash"] and counts["yaml"], f"no block of a checked language found: {counts}"


def test_every_skip_marker_has_a_reason_and_a_block():
    """A marker without a reason fails, and so does one that marks no code block (a stale marker)."""
    for path in DOC_FILES:
        lines = path.read_text().splitlines()
        marked = {b.line for b in code_blocks(path) if b.skip is not None}
        for k, line in enumerate(lines, 1):
            if not (line.lstrip().startswith("<!--") and "doc-test" in line):  # a marker is a line of its own
                continue
            m = MARKER.search(line)
            assert m, f"{path.name}:{k}: malformed doc-test marker {line.strip()!r}; expected " \
                      "<!-- doc-test: skip (why) -->"
            assert (m.group(1) or "").strip(), f"{path.name}:{k}: doc-test: skip without a reason"
            following = next((j for j in range(k, len(lines)) if lines[j].strip()), None)
            assert following is not None and following + 1 in marked, \
                f"{path.name}:{k}: the doc-test marker is not right before a code block"


# ------------------------------------------------------------------------------------------ python
@pytest.mark.parametrize("block", _blocks("python"))
def test_python_block_runs(block):
    _skip_if_marked(block)
    env = {**os.environ, "MPLBACKEND": "Agg"}
    run = subprocess.run([sys.executable, "-c", block.text], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=PYTHON_TIMEOUT)
    assert run.returncode == 0, f"{block.where}: the example exits {run.returncode}:\n{run.stderr[-4000:]}"


# ------------------------------------------------------------------------------------------ yaml
def _deep_merge(base: dict, update: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in update.items():
        out[key] = _deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else value
    return out


SECTIONS = set(IKConfig.__dataclass_fields__)


@pytest.mark.parametrize("block", _blocks("yaml"))
def test_yaml_block_parses_and_loads_through_the_config_checks(block):
    """Each YAML block parses; a config fragment, merged into the shipped panda.yaml, passes the core's and
    the node's checks, and what it says is what they hold (its loop keys in the LoopConfig)."""
    _skip_if_marked(block)
    snippet = yaml.safe_load(block.text)
    assert snippet is not None, f"{block.where}: an empty YAML block"
    if not (isinstance(snippet, dict) and set(snippet) <= SECTIONS):
        return  # YAML that is no config fragment: parsing is its check
    panda = yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())
    config = parse_config(yaml.safe_dump(_deep_merge(panda, snippet)), CONFIG_DIR)
    loop = load_loop_config(config)
    load_node_config(config.node)
    for key, value in (snippet.get("node") or {}).items():
        if isinstance(value, dict) and hasattr(loop, key):
            for sub, v in value.items():
                assert getattr(getattr(loop, key), sub) == v, f"{block.where}: node.{key}.{sub}"


# ------------------------------------------------------------------------------------------ bash
def bash_commands(text: str) -> list[list[str]]:
    """The commands of a bash block as argv lists (continuations joined, comments dropped, a quoted argument
    spanning lines kept whole, split at ``&&``, ``||``, ``;``, ``|``, ``&``)."""
    commands, pending = [], ""
    for line in text.replace("\\\n", " ").splitlines():
        pending += line + "\n"
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # no closing quotation yet
            continue
        lexer = shlex.shlex(pending, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        argv = []
        for token in lexer:
            if set(token) <= set(";&|"):
                commands += [argv] if argv else []
                argv = []
            else:
                argv.append(token)
        commands += [argv] if argv else []
        pending = ""
    assert not pending.strip(), f"unterminated quote in a bash block: {pending!r}"
    return commands


@functools.cache
def _makefile() -> tuple[set[str], set[str]]:
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, flags=re.M))
    variables = set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*[:?+]?=", text, flags=re.M))
    return targets, variables


@functools.cache
def _console_scripts() -> dict[str, str]:
    """name -> module of setup.py's console_scripts."""
    tree = ast.parse((PACKAGE / "setup.py").read_text())
    entries = next(n for n in ast.walk(tree) if isinstance(n, ast.Dict)
                   and any(isinstance(k, ast.Constant) and k.value == "console_scripts" for k in n.keys))
    scripts = entries.values[[k.value for k in entries.keys].index("console_scripts")]
    return {name.strip(): target.split(":")[0].strip()
            for name, target in (e.value.split("=", 1) for e in scripts.elts)}


@functools.cache
def _help_text(module: str) -> str:
    run = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=PYTHON_TIMEOUT)
    assert run.returncode == 0, f"python -m {module} --help exits {run.returncode}: {run.stderr[-2000:]}"
    return run.stdout


@functools.cache
def _runtime_parameters() -> tuple[str, ...]:
    from roboplan_ik_ros.node.parameters import loop_specs

    cfg = load_node_config(yaml.safe_load((CONFIG_DIR / "panda.yaml").read_text())["node"])
    return tuple(s.name for s in loop_specs(cfg, lambda v: None, lambda v: None, lambda v: None))


def _declares(module: str, parameter: str) -> bool:
    """The node of ``module`` declares ``parameter`` (at construction, or as a runtime parameter)."""
    mod = importlib.import_module(module)
    if parameter in getattr(mod, "CONSTRUCTOR_PARAMETERS", ()):
        return True
    if module.endswith("ik_controller") and parameter in _runtime_parameters():
        return True
    source = Path(mod.__file__).read_text()
    return re.search(rf"declare_parameter\(\s*[\"']{re.escape(parameter)}[\"']", source) is not None


def _check_make(argv: list[str], where: str) -> None:
    targets, variables = _makefile()
    named = [a for a in argv[1:] if "=" not in a and not a.startswith("-")]
    assert named, f"{where}: `make` without a target (the default is help)"
    for target in named:
        assert target in targets, f"{where}: make {target}: no such target; targets: {sorted(targets)}"
    for assignment in (a for a in argv[1:] if "=" in a):
        name, value = assignment.split("=", 1)
        assert name in variables, f"{where}: make {name}=...: not a Makefile variable; variables: {sorted(variables)}"
        if name == "ARGS" and "demo" in named:  # passed on to python -m roboplan_ik_ros.demo
            for option in (o.split("=")[0] for o in shlex.split(value) if o.startswith("--")):
                assert option in _help_text("roboplan_ik_ros.demo"), f"{where}: demo option {option}: not in --help"


def _check_console_script(argv: list[str], where: str) -> None:
    module = _console_scripts()[argv[0]]
    assert importlib.util.find_spec(module), f"{where}: {argv[0]}: module {module} not found"
    if "--ros-args" not in argv:
        assert len(argv) == 1, f"{where}: {argv[0]} takes ROS arguments only: {argv[1:]}"
        return
    args = argv[argv.index("--ros-args") + 1:]
    k = 0
    while k < len(args):
        assert args[k] == "-p" and k + 1 < len(args), f"{where}: unchecked ROS argument {args[k]!r}"
        name, _, value = args[k + 1].partition(":=")
        assert _declares(module, name), f"{where}: {argv[0]}: parameter {name!r} is not declared by {module}"
        if name.endswith("_file") or value.endswith((".yaml", ".srdf", ".urdf")):
            assert (ROOT / value).exists(), f"{where}: -p {name}:={value}: no such file"
        k += 2


def _check_ros2(argv: list[str], where: str) -> str:
    """"" when checked, else why the command cannot be checked here."""
    verb = argv[1:3]
    if verb == ["topic", "pub"]:
        _, type_name, payload, _ = pub_parts(argv)
        try:
            cls = interface_class(type_name)
        except ImportError:
            if type_name.startswith("control_msgs/"):
                return f"{where}: {type_name}: control_msgs is not installed here (no PyPI wheel)"
            raise
        fill_message(cls(), yaml.safe_load(payload))
    elif verb == ["service", "call"]:
        payload = argv[5] if len(argv) > 5 else "{}"
        fill_message(interface_class(argv[4], "srv").Request(), yaml.safe_load(payload))
    elif verb == ["param", "set"]:
        assert argv[4] in _runtime_parameters(), f"{where}: {argv[4]}: not a runtime parameter of ik_controller"
    elif verb == ["topic", "echo"]:
        from roboplan_ik_interfaces.msg import ControllerStatus

        assert argv[3].endswith("/status"), f"{where}: no check for echoing {argv[3]}"
        if "--field" in argv:
            field = argv[argv.index("--field") + 1]
            assert field in ControllerStatus.get_fields_and_field_types(), f"{where}: status has no field {field}"
    elif argv[1] == "launch":
        package, launch_file, *args = argv[2:]
        assert package == "roboplan_ik_ros", f"{where}: launch package {package}"
        path = PACKAGE / "launch" / launch_file
        assert path.is_file(), f"{where}: no launch file {path}"
        declared = re.findall(r"DeclareLaunchArgument\(\s*\"(\w+)\"", path.read_text())
        for arg in args:
            assert arg.split(":=")[0] in declared, f"{where}: launch argument {arg}: declared: {declared}"
    else:
        pytest.fail(f"{where}: no check for `ros2 {' '.join(argv[1:3])}`")
    return ""


def _check_pip(argv: list[str], where: str) -> None:
    assert argv[1] == "install", f"{where}: no check for pip {argv[1]}"
    pinned = {re.split(r"[=<>\[ ]", line.strip(), maxsplit=1)[0].lower()
              for name in ("requirements.txt", "requirements-bench.txt")
              for line in (ROOT / name).read_text().splitlines() if line.strip() and not line.startswith("#")}
    for package in (a for a in argv[2:] if not a.startswith("-")):
        assert package.lower() in pinned, f"{where}: pip install {package}: not in requirements*.txt"


def check_command(argv: list[str], where: str, earlier: list[list[str]]) -> str:
    """Fail unless the command ``argv`` names exists (see the module docstring); returns "" or why it
    cannot be checked here."""
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):  # VAR=value cmd
        argv = argv[1:]
    name = argv[0]
    if name == "make":
        _check_make(argv, where)
    elif name in _console_scripts():
        _check_console_script(argv, where)
    elif name == "ros2":
        return _check_ros2(argv, where)
    elif name in ("python", "python3"):
        assert argv[1] == "-m", f"{where}: no check for python {argv[1:]}"
        assert importlib.util.find_spec(argv[2]), f"{where}: python -m {argv[2]}: no such module"
    elif name in ("source", "."):
        made_by_colcon = argv[1] in COLCON_OUTPUTS and any(c[:2] == ["colcon", "build"] for c in earlier)
        assert made_by_colcon or (ROOT / argv[1]).is_file(), f"{where}: source {argv[1]}: no such file"
    elif name == "pip":
        _check_pip(argv, where)
    elif name in ROS_INSTALL_TOOLS or name in SHELL_BUILTINS:
        pass  # the shell's own, or a ROS install's tool (not on this machine): named, not runnable here
    elif "/" in name:
        assert (ROOT / name).is_file() and os.access(ROOT / name, os.X_OK), f"{where}: {name}: no such script"
    else:
        assert shutil.which(name), f"{where}: {name}: no such command here, and no check for it"
    return ""


@pytest.mark.parametrize("block", _blocks("bash"))
def test_bash_block_names_only_existing_commands(block):
    _skip_if_marked(block)
    commands = bash_commands(block.text)
    assert commands, f"{block.where}: no command"
    unchecked = [check_command(argv, f"{block.where} `{' '.join(argv)[:80]}`", commands[:k])
                 for k, argv in enumerate(commands)]
    unchecked = [u for u in unchecked if u]
    if unchecked:  # every other command passed; these could not be checked here
        pytest.skip(f"{len(unchecked)} of {len(commands)} commands unchecked: {'; '.join(unchecked)}")


def test_bash_commands_are_split_as_the_shell_splits_them():
    """The splitter the bash check relies on: continuations, comments, operators, quotes across lines."""
    text = "a -x 'q # r' \\\n  b # c\nd && e &\nf \"{x: [\n 1]}\" | g\n"
    assert bash_commands(text) == [["a", "-x", "q # r", "b"], ["d"], ["e"], ["f", "{x: [\n 1]}"], ["g"]]


@pytest.mark.parametrize("command", [
    "make no_such_target",                                              # not a Makefile target
    "make demo NO_SUCH_VARIABLE=1",                                     # not a Makefile variable
    "make demo ARGS=--no-such-option",                                  # not an option of the demo
    "ik_controller --ros-args -p no_such_parameter:=true",              # not declared by the node
    "ik_controller --ros-args -p config_file:=roboplan_ik_ros/config/no_such.yaml",
    "mock_robot --ros-args --log-level debug",                          # a ROS argument with no check
    "source scripts/no_such_env.sh",
    "python -m roboplan_ik_ros.no_such_module",
    "pip install no-such-package",                                      # not a pinned requirement
    "ros2 param set /ik_controller streaming.no_such_key 1",            # not a runtime parameter
    "ros2 topic pub --once /ik_controller/ee/target_pose geometry_msgs/msg/PoseStamped '{pose: {positon: {}}}'",
    "ros2 launch roboplan_ik_ros ik_controller.launch.py no_such_argument:=1",
    "ros2 bag record -a",                                               # a verb with no check
    "no_such_command --help",
])
def test_a_wrong_command_fails_the_bash_check(command):
    """The bash check can fail: each of these names something that does not exist."""
    (argv,) = bash_commands(command)
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        check_command(argv, "test", [])


def test_skip_markers_are_read_with_their_reason(tmp_path):
    """The line before a block (blank lines between allowed) marks it; without a reason the block fails."""
    doc = tmp_path / "doc.md"
    doc.write_text("text\n<!-- doc-test: skip (needs a robot) -->\n\n```python\nx = 1\n```\n"
                   "<!-- doc-test: skip -->\n```bash\nmake demo\n```\n```yaml\na: 1\n```\n```text\nout\n```\n")
    blocks = code_blocks(doc)
    assert [(b.lang, b.skip, b.line) for b in blocks] == [("python", "needs a robot", 4), ("bash", "", 8),
                                                         ("yaml", None, 11), ("text", None, 14)]
    with pytest.raises(pytest.skip.Exception, match="needs a robot"):
        _skip_if_marked(blocks[0])
    with pytest.raises(AssertionError, match="without a reason"):
        _skip_if_marked(blocks[1])
