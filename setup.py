"""Packaging for tb_pipeline_plugin.

`pip wheel .` / `pip install .` / `python -m build` build the TypeScript
frontend into tb_pipeline_plugin/static/ when it is missing, so the bundle is
a build output and never committed. Every package has its `__init__.py`
(tests/package/test_wheel_install.py installs the wheel and imports every module).
"""
import os
import shutil
import subprocess

from setuptools import Extension, find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = os.path.join(HERE, "tb_pipeline_plugin", "static")
# Built by `npm run build` (frontend/package.json): the tab and the timeline page's script.
BUNDLES = [os.path.join(STATIC, name) for name in ("index.js", "profiler.js")]


def build_frontend() -> None:
    """The bundle a wheel or sdist needs, built from frontend/ when missing.
    An sdist ships the built bundle (and no frontend/), so a wheel built from
    it needs no Node.js."""
    frontend = os.path.join(HERE, "frontend")
    if all(os.path.exists(b) for b in BUNDLES) or not os.path.exists(os.path.join(frontend, "package.json")):
        return
    if shutil.which("npm") is None:
        raise SystemExit(
            "tb_pipeline_plugin: building the frontend bundle needs Node.js 20 and npm on PATH "
            "(or install from an sdist or wheel, which carry the built bundle)")
    subprocess.check_call(["npm", "ci", "--no-audit", "--no-fund"], cwd=frontend)
    subprocess.check_call(["npm", "run", "build"], cwd=frontend)


class BuildPyWithFrontend(build_py):
    def run(self):
        build_frontend()
        super().run()


class SdistWithFrontend(sdist):
    def run(self):
        build_frontend()
        super().run()


# The decode's compiled fast path (trace/_scan.c). Optional: without a C
# compiler the package installs without it and decodes with msgspec alone
# (trace/scan.py says which is in use), same table, slower.
SCAN = Extension("tb_pipeline_plugin.trace._scan", ["tb_pipeline_plugin/trace/_scan.c"], optional=True)
# The nesting of host events in one walk (trace/_nest.c); optional the same way (trace/nesting.py).
NEST = Extension("tb_pipeline_plugin.trace._nest", ["tb_pipeline_plugin/trace/_nest.c"], optional=True)


setup(
    name="tb_pipeline_plugin",
    version="0.1.0",
    description="TensorBoard plugin: why is one training run slower than another",
    packages=find_packages(include=["tb_pipeline_plugin", "tb_pipeline_plugin.*"]),
    # record/boot is not a package: its sitecustomize.py is put on PYTHONPATH by `tb-pipeline record`.
    package_data={"tb_pipeline_plugin": ["static/*", "record/boot/sitecustomize.py"]},
    python_requires=">=3.10",
    install_requires=[
        "tensorboard>=2.16,<3",
        "msgspec>=0.18,<1",
        "numpy>=1.24,<3",
        "pandas>=2.0,<4",
        "scipy>=1.10",
        "psutil>=5.9,<8",
        "werkzeug>=2.2,<4",
    ],
    extras_require={
        "record": ["torch>=2.0"],
        "diagnose": ["py-spy>=0.3"],  # GIL holder sampling; without it the results say why none
        # SPDL stage statistics and GPU host metrics are optional at record time.
        "spdl": ["spdl>=0.8,<0.9"],
        "gpu": ["nvidia-ml-py"],
        # GIL contention host series (record/gil_contention.py); without it the recorder says so and records the rest.
        "gil": ["gilknocker>=0.4.2,<0.5"],
        # torch-tb-profiler's trace viewer behind our "timeline" links; 0.4.3 is
        # the release the links are tested against (its span numbering, routes).
        "profiler": ["torch-tb-profiler>=0.4.3,<0.5"],
        # `tb-pipeline summarize --scheduler`: the map over trace files on a Dask cluster.
        "cluster": ["dask[distributed]>=2024.1"],
    },
    entry_points={
        "tensorboard_plugins": [
            "tb_pipeline = tb_pipeline_plugin.server.loader:PipelinePluginLoader",
        ],
        "console_scripts": [
            "tb-pipeline = tb_pipeline_plugin.cli:main",
        ],
    },
    ext_modules=[SCAN, NEST],
    cmdclass={"build_py": BuildPyWithFrontend, "sdist": SdistWithFrontend},
)
