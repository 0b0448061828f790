"""IKObjective messages for the tests, built from the message definitions alone (the pose's quaternion by
pinocchio, not by the package's own conversions): the tests that check the package do not lean on it."""

from __future__ import annotations

import pinocchio as pin

TIP = "panda_hand_tcp"


def objective_msg(kind: str, link: str = TIP, **kw):
    """An IKObjective of ``kind`` ("frame", "point", "axis" or a raw type number) on ``link``: ``points``,
    ``targets`` (3-vectors), ``axis``, ``direction`` (3-vectors), ``pose`` (pin.SE3); other keywords are set as
    they are (``relative_to``, ``weight``, ``weights``, ...)."""
    from geometry_msgs.msg import Point, Vector3
    from roboplan_ik_interfaces.msg import IKObjective

    m = IKObjective(type={"frame": IKObjective.TYPE_FRAME, "point": IKObjective.TYPE_POINT,
                          "axis": IKObjective.TYPE_AXIS}.get(kind, kind), link=link)
    for name in ("points", "targets"):
        if name in kw:
            setattr(m, name, [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in kw.pop(name)])
    for name in ("axis", "direction"):
        if name in kw:
            v = kw.pop(name)
            setattr(m, name, Vector3(x=float(v[0]), y=float(v[1]), z=float(v[2])))
    if "pose" in kw:
        T = kw.pop("pose")
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(x) for x in T.translation)
        x, y, z, w = pin.Quaternion(T.rotation).coeffs()
        m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w = (
            float(x), float(y), float(z), float(w))
    for name, value in kw.items():
        setattr(m, name, value)
    return m
