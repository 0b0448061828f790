"""Generate a C kernel's layout functions (``<prefix>_layout`` and ``<prefix>_layout_names``) from its struct typedefs:
per struct its size and every field's offset, size and name, which compiled_library.check_layout compares with the
ctypes mirrors when the kernel is loaded. Run after changing a struct (the test suite fails until then):

    python scripts/kernel_layout.py roboplan_ik_ros/roboplan_ik_ros/core/oink/kernel/oink_kernel.c oink
    python scripts/kernel_layout.py roboplan_ik_ros/roboplan_ik_ros/core/simple_ik/kernel/simple_ik_kernel.c sik
    python scripts/kernel_layout.py roboplan_ik_ros/roboplan_ik_ros/core/model/kernel/barrier_step.h pdk
    python scripts/kernel_layout.py roboplan_ik_ros/roboplan_ik_ros/core/control/kernel/control_kernel.c ctl

``--check``: write nothing, exit 1 if the file's functions are not what its typedefs give.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

KERNELS = {"oink": "roboplan_ik_ros/roboplan_ik_ros/core/oink/kernel/oink_kernel.c",
           "sik": "roboplan_ik_ros/roboplan_ik_ros/core/simple_ik/kernel/simple_ik_kernel.c",
           "pdk": "roboplan_ik_ros/roboplan_ik_ros/core/model/kernel/barrier_step.h",
           "ctl": "roboplan_ik_ros/roboplan_ik_ros/core/control/kernel/control_kernel.c"}


def generated(src: str, prefix: str) -> str:
    """``src`` with its layout functions (re)generated at its end."""
    src = re.sub(r'\n/\* The layout of every struct the Python side builds.*\Z', '\n', src, flags=re.S)
    src_nc = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    structs = []
    for m in re.finditer(r'typedef struct \{(.*?)\}\s*(\w+);', src_nc, flags=re.S):
        body, name = m.group(1), m.group(2)
        fields = []
        for decl in body.split(';'):
            decl = decl.strip()
            if decl:
                fields += [re.findall(r'(\w+)\s*$', q.strip())[0] for q in decl.split(',')]
        structs.append((name, fields))
    lines = []
    for name, fields in structs:
        items = [f"sizeof({name})"]
        for f in fields:
            items += [f"offsetof({name}, {f})", f"sizeof((({name} *)0)->{f})"]
        cur = "       "
        for it in items:
            piece = " " + it + ","
            if len(cur) + len(piece) > 116:
                lines.append(cur); cur = "       "
            cur += piece
        lines.append(cur)
    names = ";".join(name + ":" + ",".join(fields) for name, fields in structs)
    chunks = []
    rest = names
    while rest:
        cut = rest[:100]
        if len(rest) > 100:
            k = max(cut.rfind(','), cut.rfind(';'))
            cut = rest[:k + 1]
        chunks.append('        "' + cut + '"')
        rest = rest[len(cut):]
    out = []
    out.append("/* The layout of every struct the Python side builds with ctypes: per struct, its size then each field's")
    out.append(f" * offset and size, in declaration order; {prefix}_layout writes them (count returned), {prefix}_layout_names says whose")
    out.append(" * (\"struct:field,field;...\"), for the loader to compare with its ctypes.Structure mirrors, by name and")
    out.append(" * offset, before any call (compiled_library.check_layout). Generated from the typedefs above")
    out.append(" * (scripts/kernel_layout.py): regenerate when a struct changes. */")
    out.append(f"const char *{prefix}_layout_names(void) {{")
    out.append("    return")
    out += chunks[:-1]
    out.append(chunks[-1] + ";")
    out.append("}")
    out.append("")
    out.append(f"int64_t {prefix}_layout(int64_t *out, int64_t capacity) {{")
    out.append("    const int64_t layout[] = {")
    out += lines
    out.append("    };")
    out.append("    const int64_t count = (int64_t)(sizeof(layout) / sizeof(layout[0]));")
    out.append("    for (int64_t i = 0; i < count && i < capacity; ++i) out[i] = layout[i];")
    out.append("    return count;")
    out.append("}")
    return src.rstrip('\n') + '\n\n' + '\n'.join(out) + '\n'


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", type=Path)
    p.add_argument("prefix")
    p.add_argument("--check", action="store_true")
    args = p.parse_args(argv)
    src = args.file.read_text()
    new = generated(src, args.prefix)
    if args.check:
        if new != src:
            print(f"{args.file}: its layout functions are stale: run scripts/kernel_layout.py {args.file} {args.prefix}")
            return 1
        return 0
    args.file.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
