from glob import glob

from setuptools import Extension, find_packages, setup

package_name = "roboplan_ik_ros"

setup(
    name=package_name,
    version="0.1.0",
    # package_dir={"": "."} makes pip's editable install a plain .pth entry for this folder, which
    # also works with `python -m` from the repo root (no import-hook finder).
    package_dir={"": "."},
    packages=find_packages(exclude=["test", "test.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
    ],
    # OInK's compiled assembly: a plain C shared library (no Python API) that the core loads with
    # ctypes (core/oink/compiled_assembly.py); without a C compiler the core runs its numpy path.
    ext_modules=[
        Extension(
            package_name + ".core.oink._oink_kernel",
            sources=["roboplan_ik_ros/core/oink/kernel/oink_kernel.c"],
            extra_compile_args=["-O3", "-fno-math-errno"],
        ),
        # SimpleIK's step (core/simple_ik/compiled_step.py; without it SimpleIK runs its Python step)
        Extension(
            package_name + ".core.simple_ik._simple_ik_kernel",
            sources=["roboplan_ik_ros/core/simple_ik/kernel/simple_ik_kernel.c"],
            extra_compile_args=["-O3", "-fno-math-errno"],
        ),
    ],
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="roboplan_ik_ros maintainers",
    maintainer_email="maintainer@example.com",
    description="Real-time differential inverse kinematics as a ROS 2 lifecycle node.",
    license="BSD-3-Clause",
    entry_points={
        "console_scripts": [
            "ik_controller = roboplan_ik_ros.node.ik_controller:main",
            "mock_robot = roboplan_ik_ros.node.mock_robot:main",
            "roboplan_ik_demo = roboplan_ik_ros.demo:main",
        ],
    },
)
