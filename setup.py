"""The package list, which pyproject.toml cannot give: replay_core's packages as found (with folders
that have no __init__.py, such as the migrations' versions), plus the app's own files installed as the
package agent_replay_app, which pyproject.toml maps onto the repository's top."""

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

APP = "agent_replay_app"


class BuildPy(build_py):
    """The repository's top holds this file too: the app package takes every module there but this one."""

    def find_package_modules(self, package, package_dir):
        return [found for found in super().find_package_modules(package, package_dir) if (found[0], found[1]) != (APP, "setup")]


setup(
    packages=[
        *find_namespace_packages(include=["replay_core", "replay_core.*"], exclude=["*__pycache__"]),
        APP,
        f"{APP}.pages",
        f"{APP}.ui",
    ],
    cmdclass={"build_py": BuildPy},
)
