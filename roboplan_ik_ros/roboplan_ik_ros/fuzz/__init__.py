"""The closed-loop scenario fuzzer (issue 30), ROS-free: seeded random scenarios (robot, scene, goals) run
through the core :class:`~roboplan_ik_ros.core.control.control_loop.ControlLoop` at its control rate on a
simulated robot that follows every command (or lags it by a few ticks), checked against invariants the fuzzer
computes itself (coal distances on the scene's geometry, pinocchio FK, command differences, Ruckig's
time-optimal durations).

- :mod:`.robots`: the fuzzed robots and their configs (the shipped YAMLs; what is added to them and why).
- :mod:`.scenario`: :func:`~.scenario.make_scenario`, one seeded random scenario.
- :mod:`.distances`: the fuzzer's own distance oracle (coal on the scene's collision geometry).
- :mod:`.invariants`: the checks, each a pure function that the unit tests feed violations.
- :mod:`.runner`: :func:`~.runner.run_scenario`, the closed loop.
- :mod:`.cli`: ``python -m roboplan_ik_ros.fuzz --n 1000 --seed 0`` (``make fuzz``), ``--replay SEED``.
"""
