# Environment for running the project from the venv (sourced by the Makefile: `source scripts/env.sh`).
# Isolates ROS 2 traffic and logs per run. Any variable already set by the caller wins, except
# AMENT_PREFIX_PATH (the venv only) and ROS_DOMAIN_ID, which `make test` always picks per run (set ROBOPLAN_ROS_DOMAIN_ID to force one).
_roboplan_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_roboplan_venv=${ROBOPLAN_VENV:-$_roboplan_root/.venv}
export PATH="$_roboplan_venv/bin:$PATH"
export AMENT_PREFIX_PATH=$_roboplan_venv
export RMW_IMPLEMENTATION=${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
export ROS_AUTOMATIC_DISCOVERY_RANGE=${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}
# Valid domain ids are 0-101 and 215-232; 1..100 from the shell's PID keeps parallel runs apart.
export ROS_DOMAIN_ID=${ROBOPLAN_ROS_DOMAIN_ID:-$((1 + $$ % 100))}
if [ -z "${ROS_LOG_DIR:-}" ]; then
    ROS_LOG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/roboplan_ik_ros-log.XXXXXX")
    export ROS_LOG_DIR
    # Removed when the sourcing shell exits (set ROS_LOG_DIR yourself to keep the logs).
    trap 'rm -rf "$ROS_LOG_DIR"' EXIT
fi
unset _roboplan_root _roboplan_venv
