"""The control loop's modes, the codes of what limits a stream's motion, and constants its parts share
(control_loop.py, loop_goals.py, loop_view.py)."""

# Modes (the strings of roboplan_ik_interfaces/msg/ControllerStatus MODE_*).
INACTIVE = "inactive"
WAITING_FOR_GOAL = "waiting_for_goal"
TRACKING = "tracking"
RECOVERING = "recovering"
HOLDING = "holding"
PAUSED = "paused"
STALE = "stale"
MOVING_MODES = (TRACKING, RECOVERING)

# Why the arm moves slower than a stream asks (ControllerStatus MOTION_LIMIT_*; "" = nothing limits it).
COMMAND_TIMEOUT = "command_timeout"
LIMIT_PAUSED = "paused"
LEASH = "leash"  # a stream's target is held at its leash and no joint bound holds the step (task weights, damping)
# JOINT_BOUND, VELOCITY_BOUND, ACCELERATION_BOUND, FOLLOWING_ERROR: binding_bounds.py (a jogged joint at its
# limit, or what holds a step whose target is at the leash)
SINGULARITY = "singularity"
BARRIER = "barrier"  # the step is bounded by barrier rows (the node reads them from the step's outcome)
# With an acceleration limit, a shaped joint target (configuration and joint tasks) accelerates, brakes and jerks
# at this share of each joint's a_max and j_max (the arm follows it with the rest to spare for the other tasks).
RAMP_ACCELERATION_SHARE = 0.5
GOAL_REACH_FACTOR = 2.0  # default max_goal_distance: this times the arm's reach from its first joint
BINDING_SLACK = 1e-5  # [rad] a barrier row binds when the step could move at most this further along it
