#!/usr/bin/env bash
# Create/refresh the project venv: pinned Python deps + ROS 2 wheels, roboplan_ik_interfaces built
# with CMake into the venv, roboplan_ik_ros installed in editable mode.
# Idempotent: each stage is skipped while a hash of its inputs is unchanged (stamps in $VENV).
#
#   scripts/bootstrap.sh            # what `make test` / `make demo` run
#   BENCH=1 scripts/bootstrap.sh    # also install requirements-bench.txt (what `make bench` runs)
#   FORCE=1 scripts/bootstrap.sh    # redo every stage
# Env: ROBOPLAN_VENV (default <repo>/.venv), PYTHON (default python3, used only to create the venv).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
VENV=${ROBOPLAN_VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}
BUILD=$ROOT/build
LOGS=$BUILD/logs
mkdir -p "$LOGS"

# One bootstrap at a time per checkout (several people/terminals may run `make test` at once).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$BUILD/.bootstrap.lock"
    flock 9
fi

say() { printf '[bootstrap] %s\n' "$*"; }

# Run a command with output to a log file; on failure show the log's tail (minus pip's noise).
run_logged() {
    local log=$1; shift
    if ! "$@" >"$log" 2>&1; then
        echo "[bootstrap] FAILED: $*" >&2
        grep -v "is ignored" "$log" | tail -n 40 >&2 || true
        echo "[bootstrap] full log: $log" >&2
        exit 1
    fi
}

# Hash of the given files (names + contents); missing globs are skipped.
hash_files() {
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        printf '%s\n' "$f"
        cat "$f"
    done | sha256sum | cut -d' ' -f1
}

stage_done() { [ "${FORCE:-0}" != 1 ] && [ -f "$VENV/.stamp-$1" ] && [ "$(cat "$VENV/.stamp-$1")" = "$2" ]; }
mark_done() { printf '%s\n' "$2" >"$VENV/.stamp-$1"; }

PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
SECONDS=0

# 1. venv -------------------------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    say "creating venv $VENV ($($PYTHON --version 2>&1))"
    "$PYTHON" -m venv "$VENV"
    run_logged "$LOGS/pip-upgrade.log" "${PIP[@]}" install -q --upgrade pip
fi

# 2. pinned requirements (pip) ----------------------------------------------------------------
h_req=$(hash_files requirements.txt scripts/bootstrap.sh)
if ! stage_done requirements "$h_req"; then
    say "installing requirements.txt (first run: 1-2 min; log: build/logs/pip-requirements.log)"
    run_logged "$LOGS/pip-requirements.log" "${PIP[@]}" install -q -r requirements.txt
    mark_done requirements "$h_req"
fi

# 3. roboplan_ik_interfaces (rosidl, plain CMake into the venv) -------------------------------
h_itf=$(hash_files requirements.txt scripts/bootstrap.sh scripts/fix_ros_wheel_cmake.py \
    roboplan_ik_interfaces/CMakeLists.txt roboplan_ik_interfaces/package.xml \
    roboplan_ik_interfaces/msg/*.msg roboplan_ik_interfaces/srv/*.srv)
if ! stage_done interfaces "$h_itf" || [ ! -d "$VENV/share/roboplan_ik_interfaces" ]; then
    say "building roboplan_ik_interfaces (log: build/logs/interfaces.log)"
    "$VENV/bin/python" scripts/fix_ros_wheel_cmake.py "$VENV"
    export CMAKE_PREFIX_PATH=$VENV AMENT_PREFIX_PATH=$VENV
    {
        cmake -S roboplan_ik_interfaces -B "$BUILD/roboplan_ik_interfaces" \
            -DCMAKE_INSTALL_PREFIX="$VENV" -DPython3_EXECUTABLE="$VENV/bin/python" \
            -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release &&
        cmake --build "$BUILD/roboplan_ik_interfaces" -j "$(nproc)" &&
        cmake --install "$BUILD/roboplan_ik_interfaces"
    } >"$LOGS/interfaces.log" 2>&1 || {
        echo "[bootstrap] FAILED: building roboplan_ik_interfaces" >&2
        tail -n 40 "$LOGS/interfaces.log" >&2
        echo "[bootstrap] full log: $LOGS/interfaces.log" >&2
        exit 1
    }
    mark_done interfaces "$h_itf"
fi

# 4. DAQP's C sources (the OInK kernel's QP): the sdist of the pinned version, by name and version -----------
daqp_version=$(sed -n 's/^daqp==\([0-9][0-9A-Za-z.]*\).*/\1/p' requirements.txt)
DAQP_SOURCES=$BUILD/daqp-$daqp_version  # setup.py looks here (roboplan_ik_ros/daqp_sources.py)
if [ ! -f "$DAQP_SOURCES/csrc/src/daqp.c" ]; then
    say "fetching DAQP $daqp_version's C sources into build/ (log: build/logs/daqp-sources.log)"
    if ! scripts/fetch_daqp_sources.sh "${PIP[@]}" >"$LOGS/daqp-sources.log" 2>&1; then
        say "note: DAQP's C sources could not be fetched (see $LOGS/daqp-sources.log): the OInK kernel is built"
        say "      without its QP, which the daqp Python module then solves (same results, slower)"
    fi
fi

# 5. roboplan_ik_ros (editable: imports resolve to the source tree) ---------------------------
h_pkg=$(hash_files scripts/bootstrap.sh roboplan_ik_ros/setup.py roboplan_ik_ros/daqp_sources.py \
    roboplan_ik_ros/setup.cfg \
    roboplan_ik_ros/package.xml roboplan_ik_ros/launch/*.launch.py roboplan_ik_ros/config/*.yaml \
    roboplan_ik_ros/config/*.srdf \
    roboplan_ik_ros/roboplan_ik_ros/core/oink/kernel/*.c roboplan_ik_ros/roboplan_ik_ros/core/oink/kernel/*.h \
    "$DAQP_SOURCES"/csrc/src/*.c "$DAQP_SOURCES"/csrc/include/*.h \
    roboplan_ik_ros/roboplan_ik_ros/core/simple_ik/kernel/*.c \
    roboplan_ik_ros/roboplan_ik_ros/core/model/kernel/*.cpp roboplan_ik_ros/roboplan_ik_ros/core/model/kernel/*.hpp \
    roboplan_ik_ros/roboplan_ik_ros/core/kernel/*.h)
kernel_built() {
    compgen -G "roboplan_ik_ros/roboplan_ik_ros/core/oink/_oink_kernel*.so" >/dev/null &&
        compgen -G "roboplan_ik_ros/roboplan_ik_ros/core/simple_ik/_simple_ik_kernel*.so" >/dev/null
}
if ! stage_done package "$h_pkg" || ! kernel_built; then
    # also builds the C kernels in place (setup.py ext_modules; core/oink/compiled_assembly.py and
    # core/simple_ik/compiled_step.py load them)
    say "installing roboplan_ik_ros (editable; log: build/logs/pip-package.log)"
    run_logged "$LOGS/pip-package.log" "${PIP[@]}" install -v --no-deps -e ./roboplan_ik_ros
    # pip does not install data_files in editable mode: lay out what ament/colcon would (setup.py's data_files),
    # one symlink per file to the sources (like `colcon build --symlink-install`). Folders stay real folders:
    # `ros2 launch`'s package lookup walks share/<package> with os.walk, which does not follow a folder link.
    share="$VENV/share/roboplan_ik_ros"
    mkdir -p "$VENV/share/ament_index/resource_index/packages" "$share" "$VENV/lib/roboplan_ik_ros"
    : >"$VENV/share/ament_index/resource_index/packages/roboplan_ik_ros"
    rm -rf "$share/package.xml" "$share/launch" "$share/config"
    mkdir -p "$share/launch" "$share/config"
    ln -s "$ROOT/roboplan_ik_ros/package.xml" "$share/package.xml"
    for f in roboplan_ik_ros/launch/*.launch.py roboplan_ik_ros/config/*.yaml roboplan_ik_ros/config/*.srdf; do
        if [ -f "$f" ]; then ln -s "$ROOT/$f" "$share/$(basename "$(dirname "$f")")/"; fi
    done
    for exe in ik_controller mock_robot mock_camera roboplan_ik_demo; do  # where `ros2 run`/launch_ros look
        ln -sf "$VENV/bin/$exe" "$VENV/lib/roboplan_ik_ros/$exe"
    done
    if ! grep -q "DAQP's C sources (.*) are built into" "$LOGS/pip-package.log"; then
        say "note: the OInK kernel was built without DAQP (its C sources not found or not compiled): the daqp"
        say "      Python module solves its QP (same results, slower); see $LOGS/pip-package.log"
    fi
    if ! compgen -G "roboplan_ik_ros/roboplan_ik_ros/core/model/_pair_distance_kernel*.so" >/dev/null; then
        say "note: the collision distance kernel was not built (coal's or Eigen's headers not found, or no C++"
        say "      compiler): collision barriers run their Python path (same rows, slower); see $LOGS/pip-package.log"
    fi
    mark_done package "$h_pkg"
fi

# 6. optional benchmark peers -----------------------------------------------------------------
if [ "${BENCH:-0}" = 1 ]; then
    h_bench=$(hash_files requirements.txt requirements-bench.txt)
    if ! stage_done bench "$h_bench"; then
        say "installing requirements-bench.txt (log: build/logs/pip-bench.log)"
        run_logged "$LOGS/pip-bench.log" "${PIP[@]}" install -q -r requirements-bench.txt -c requirements.txt
        mark_done bench "$h_bench"
    fi
fi

if [ "$SECONDS" -gt 1 ]; then say "done in ${SECONDS}s"; fi
