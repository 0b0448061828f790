"""The parts of an SRDF the IK core uses: robot name, joint groups, named group states and disabled
collision pairs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from ..errors import InvalidInputError


@dataclass
class SrdfGroup:
    name: str
    joints: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    chains: list[tuple[str, str]] = field(default_factory=list)  # (base_link, tip_link)
    subgroups: list[str] = field(default_factory=list)


@dataclass
class Srdf:
    robot_name: str = ""  # the root element's name attribute
    groups: dict[str, SrdfGroup] = field(default_factory=dict)
    group_states: dict[str, dict[str, float]] = field(default_factory=dict)  # state name -> joint -> value
    disabled_collisions: list[tuple[str, str]] = field(default_factory=list)  # (link1, link2)

    @property
    def has_disable_collisions(self) -> bool:
        """True if the SRDF has any ``disable_collisions`` element."""
        return bool(self.disabled_collisions)


def parse_srdf(srdf_xml: str) -> Srdf:
    """Parse the SRDF text; an empty string gives an empty :class:`Srdf`."""
    out = Srdf()
    if not srdf_xml.strip():
        return out
    try:
        root = ET.fromstring(srdf_xml)
    except ET.ParseError as exc:
        raise InvalidInputError(f"robot_description_semantic: cannot parse SRDF XML: {exc}") from exc
    out.robot_name = root.get("name", "")
    for g in root.findall("group"):
        name = g.get("name", "")
        grp = SrdfGroup(name)
        grp.joints = [e.get("name", "") for e in g.findall("joint")]
        grp.links = [e.get("name", "") for e in g.findall("link")]
        grp.chains = [(e.get("base_link", ""), e.get("tip_link", "")) for e in g.findall("chain")]
        grp.subgroups = [e.get("name", "") for e in g.findall("group")]
        out.groups[name] = grp
    for s in root.findall("group_state"):
        values = {}
        for j in s.findall("joint"):
            try:
                values[j.get("name", "")] = float(j.get("value", "nan").split()[0])
            except ValueError as exc:
                raise InvalidInputError(
                    f"SRDF group_state {s.get('name')!r}: joint {j.get('name')!r} has a non-numeric value"
                ) from exc
        out.group_states[s.get("name", "")] = values
    out.disabled_collisions = [(e.get("link1", ""), e.get("link2", "")) for e in root.findall("disable_collisions")]
    return out
