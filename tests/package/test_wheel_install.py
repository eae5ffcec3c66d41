"""`pip install .` as a new user runs it: a fresh virtual environment, no
editable install anywhere, the working directory outside the checkout.

The README's install lines run as written on a copy of the checkout's files
(what a fresh clone holds: no built bundle, no node_modules), then the
installed plugin is used the three ways a user uses it: `tb-pipeline diff`
on a shared GPU pair, `tb-pipeline record` (the sitecustomize boot) on a tiny
training script, and `tensorboard --logdir` serving `runs` and a diff route.
Then the same for a wheel built from an sdist, and last an install with a
package missing: TensorBoard must keep serving, our tab saying why.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
import zipfile
import tarfile
from pathlib import Path

import pytest

from support.tb_cli import free_port, get, runs_ready, serve_tensorboard

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "tb_pipeline_plugin"
# Not modules: put on PYTHONPATH by `tb-pipeline record`, run by Python's start-up.
DATA_FILES = ("record/boot/sitecustomize.py", "static/index.js", "static/profiler.js", "static/profiler.html")
CHROMIUM = "/usr/bin/chromium"
AMP_PAIR = REPO.parent / "shared" / "traces" / "h200" / "amp"

TINY_TRAINING = textwrap.dedent("""
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(TensorDataset(torch.randn(96, 16), torch.randn(96, 1)), batch_size=8)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print("trained")
""")

# Lists the importable modules of the installed package and imports each:
# what `import tb_pipeline_plugin...` finds in the venv, nothing of the checkout.
IMPORT_EVERY_MODULE = textwrap.dedent("""
    import importlib, json, pkgutil, sys
    import tb_pipeline_plugin as package
    names, failed = [package.__name__], {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if info.name.endswith(".__main__"):
            continue  # runs the command when imported; its presence is checked as a file
        names.append(info.name)
        try:
            importlib.import_module(info.name)
        except Exception as error:
            failed[info.name] = repr(error)
    print(json.dumps({"file": package.__file__, "names": names, "failed": failed}))
""")


def checkout_modules() -> set[str]:
    """Every module of the checkout's package, as dotted names."""
    root = REPO / PACKAGE
    names = set()
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[:2] == ("record", "boot") or "__pycache__" in rel.parts:
            continue
        parts = (PACKAGE,) + rel.with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def readme_install_lines() -> list[str]:
    """The `pip install` lines of the README's install block, as a user copies them."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"Into your own environment.*?```bash\n(.*?)```", readme, re.S)
    assert block, "README lost the install block of 'Use it on your own runs'"
    lines = [line.split("#", 1)[0].strip() for line in block[1].splitlines()]
    installs = [line for line in lines if line.startswith("pip install")]
    assert installs and installs[0] == "pip install .", installs
    assert any(line.startswith("tensorboard --logdir") for line in lines), lines
    return installs


class Venv:
    """A fresh virtual environment, used from a directory outside the checkout,
    with nothing of the test session's environment that could import the
    checkout (PYTHONPATH, the session's venv)."""

    def __init__(self, path: Path, cwd: Path):
        self.path, self.cwd = path, cwd
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        self.site = Path(self.python("-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.path)
        # Speed only: no .pyc compiled at install, no version check.
        env.update(PIP_NO_COMPILE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        return env

    def run(self, *cmd: str, cwd: Path | None = None, timeout: float = 600, check: bool = True, shell: bool = False):
        proc = subprocess.run(cmd[0] if shell else list(cmd), cwd=cwd or self.cwd, env=self.env(), shell=shell,
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(f"{cmd} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
        return proc

    def python(self, *args: str, **kw):
        return self.run(str(self.path / "bin" / "python"), *args, **kw)

    def bin(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def installed_files(self) -> set[str]:
        root = self.site / PACKAGE
        return {str(p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}


def copy_checkout(dest: Path) -> Path:
    """The files a fresh clone holds (tracked, plus new files not ignored):
    no built bundle, no node_modules, no build/ left over."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    assert not (dest / PACKAGE / "static" / "index.js").exists()
    return dest


def check_the_install(venv: Venv, work: Path, label: str) -> None:
    """Everything a user does with the installed package, in `venv` only."""
    missing_data = [f for f in DATA_FILES if not (venv.site / PACKAGE / f).is_file()]
    assert not missing_data, f"{label}: data files missing from the install: {missing_data}"

    report = json.loads(venv.python("-c", IMPORT_EVERY_MODULE).stdout.strip().splitlines()[-1])
    assert report["file"].startswith(str(venv.site)), f"{label}: imported {report['file']}, not the install"
    assert not report["failed"], f"{label}: modules that do not import: {report['failed']}"
    absent = checkout_modules() - set(report["names"]) - {f"{PACKAGE}.diagnose.__main__"}
    assert not absent, f"{label}: modules of the checkout missing from the install: {sorted(absent)}"
    assert (venv.site / PACKAGE / "diagnose" / "__main__.py").is_file()
    # The decode's compiled scanner is built at install (and the sdist carries its source).
    built = venv.python("-c", "from tb_pipeline_plugin.trace import scan; print(scan.AVAILABLE, scan.__file__)")
    assert built.stdout.startswith("True"), f"{label}: no compiled scanner: {built.stdout}{built.stderr}"
    walk = venv.python("-c", "from tb_pipeline_plugin.trace import nesting; print(nesting._walk is not None)")
    assert walk.stdout.startswith("True"), f"{label}: no compiled nesting walk: {walk.stdout}{walk.stderr}"

    diff = venv.run(venv.bin("tb-pipeline"), "diff", str(AMP_PAIR / "baseline"), str(AMP_PAIR / "experimental"))
    assert "faster" in diff.stdout and "Experimental" in diff.stdout, diff.stdout[-2000:]

    logdir = work / f"logdir_{label}"
    shutil.copytree(AMP_PAIR, logdir / "amp")
    script = work / "train_tiny.py"
    script.write_text(TINY_TRAINING)
    rec = venv.run(venv.bin("tb-pipeline"), "record", "--logdir", str(logdir), "--run", "tiny",
                   "--profile", "wait=1,warmup=1,active=2", "--", venv.bin("python"), str(script))
    assert "trained" in rec.stdout, rec.stdout + rec.stderr
    assert list((logdir / "tiny").rglob("*.pt.trace.json*")), sorted(map(str, (logdir / "tiny").rglob("*")))
    assert list((logdir / "tiny" / "pipeline").glob("*.jsonl"))

    tensorboard = venv.bin("tensorboard")
    command = lambda port: [tensorboard, "--logdir", str(logdir), "--port", str(port), "--host", "127.0.0.1"]
    names = ("amp/baseline", "amp/experimental", "tiny")
    with serve_tensorboard(logdir, work / f"tensorboard_{label}.log", until=runs_ready(*names),
                           env=venv.env(), command=command) as port:
        listing = _get_json(port, "/data/plugins_listing")
        assert listing["tb_pipeline"]["enabled"], listing["tb_pipeline"]
        overview = _when_ready(port, "diff/overview", baseline="amp/baseline", experimental="amp/experimental")
        assert overview["baseline"]["run"] == "amp/baseline", overview["baseline"]
        tiny = _when_ready(port, "pipeline", run="tiny")
        assert tiny, tiny


def _tab_text_in_chromium(port: int) -> str:
    """What our tab shows in TensorBoard's page, as a user sees it."""
    from playwright.sync_api import sync_playwright

    from support.browser import CHROMIUM_ARGS, _plugin_frame

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{port}/#tb_pipeline")
            frame = _plugin_frame(page)
            text = frame.wait_for_selector("[role=alert]", timeout=60_000).text_content()
            assert "ModuleNotFoundError" in text and "reinstall" in text, text
            assert not errors, errors
            return text
        finally:
            browser.close()


def _get_json(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as resp:
        return json.loads(resp.read())


def _when_ready(port: int, route: str, timeout_s: float = 120, **params) -> dict:
    """A data route's answer once its runs are parsed (409 until then)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return get(port, route, **params)
        except urllib.error.HTTPError as error:
            if error.code != 409 or time.monotonic() > deadline:
                raise AssertionError(f"{route} {params}: {error.code} {error.read()[:2000]!r}") from None
        time.sleep(0.3)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel_install")
    src = copy_checkout(root / "tb_pipeline_plugin-checkout")
    outside = root / "elsewhere"
    outside.mkdir()
    venv = Venv(root / "venv", cwd=outside)
    # Recording needs torch, as in the user's training environment: the one this session runs with.
    linked = link_installed("torch", venv.site)
    assert "torch" in linked, linked
    assert venv.python("-c", "import torch; print(torch.__file__)").stdout.startswith(str(venv.site))
    return root, src, outside, venv


def link_installed(name: str, site: Path) -> set[str]:
    """Distribution `name` and those it requires, as pip installed them in this session's environment, hard-linked
    into `site` file by file from their RECORD (copied across file systems): an environment that has them
    installed, without unpacking torch's 900 MB wheel again (`pip install torch` was ~34 s of this module). A
    distribution `site` already holds (the venv's own pip and setuptools) is left as it is."""
    from importlib.metadata import distribution, distributions
    from packaging.requirements import Requirement

    present = {d.metadata["Name"].lower().replace("_", "-") for d in distributions(path=[str(site)])}
    done, todo = set(), [name]
    while todo:
        dist = distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in done or key in present:
            continue
        done.add(key)
        todo += [r.name for r in map(Requirement, dist.requires or [])
                 if r.marker is None or r.marker.evaluate({"extra": ""})]
        base = Path(dist.locate_file(""))
        for rel in dist.files or []:
            src, dest = base / rel, site / rel
            if ".." in rel.parts or not src.is_file():
                continue  # scripts in bin/ (their #! names the other interpreter), .pyc not written
            _link_or_copy(src, dest)
            if src.suffix == ".py":
                # Its bytecode as this session's imports compiled it (not in RECORD): valid for the link, which has
                # the source's mtime and size, so the venv's first `import torch` does not compile torch again
                # (5 s of this module's set-up).
                cached = Path(importlib.util.cache_from_source(str(src)))
                if cached.is_file():
                    _link_or_copy(cached, Path(importlib.util.cache_from_source(str(dest))))
    return done


def _link_or_copy(src: Path, dest: Path) -> None:
    if dest.exists():  # a .pyc RECORD lists (pip compiled it at install) and linked with its source
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def test_pip_install_from_the_checkout_gives_a_working_plugin(workspace):
    root, src, outside, venv = workspace
    for line in readme_install_lines():
        venv.run(line, cwd=src, shell=True)
    assert not (venv.site / "__editable__.tb_pipeline_plugin-0.1.0.pth").exists()
    assert not list(venv.site.glob("__editable__*tb_pipeline*")), "an editable install"
    check_the_install(venv, outside, "wheel")


def test_a_wheel_built_from_the_sdist_holds_the_same_files_and_works(workspace):
    root, src, outside, venv = workspace
    installed_from_checkout = venv.installed_files()
    assert installed_from_checkout, "run after the checkout install"
    sdist_dir = root / "sdist"
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(sdist_dir), str(src)],
                   check=True, capture_output=True, text=True, timeout=600)
    [sdist] = sdist_dir.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    for data in DATA_FILES:
        assert f"{PACKAGE}/{data}" in members, f"the sdist lacks {data}"
    # Without npm on PATH: a wheel from the sdist needs no Node.js (it ships the bundle).
    wheel_dir = root / "wheel_from_sdist"
    venv.run(venv.bin("pip"), "wheel", "-q", "--no-deps", "-w", str(wheel_dir), str(sdist))
    [wheel] = wheel_dir.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        entry_points = zf.read(next(n for n in zf.namelist() if n.endswith("entry_points.txt"))).decode()
    assert "tb_pipeline_plugin.server.loader:PipelinePluginLoader" in entry_points, entry_points
    venv.run(venv.bin("pip"), "install", "-q", "--no-deps", "--force-reinstall", str(wheel))
    assert venv.installed_files() == installed_from_checkout, (
        sorted(venv.installed_files() ^ installed_from_checkout))
    check_the_install(venv, outside, "sdist")


def test_a_plugin_that_cannot_load_leaves_tensorboard_serving(workspace):
    """The failure of issue 29 itself: a package missing from the install.
    TensorBoard starts and serves its other plugins; our tab says why."""
    root, src, outside, venv = workspace
    shutil.rmtree(venv.site / PACKAGE / "analysis")
    logdir = outside / "logdir_broken"
    shutil.copytree(AMP_PAIR, logdir / "amp")
    port = free_port()
    log_path = outside / "tensorboard_broken.log"
    with open(log_path, "w+") as log:
        proc = subprocess.Popen([venv.bin("tensorboard"), "--logdir", str(logdir), "--port", str(port),
                                 "--host", "127.0.0.1"], stdout=log, stderr=subprocess.STDOUT, env=venv.env(),
                                cwd=outside)
        try:
            listing = None
            deadline = time.monotonic() + 120
            while listing is None:
                try:
                    listing = _get_json(port, "/data/plugins_listing")
                except (urllib.error.URLError, ConnectionError, OSError):
                    if proc.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        pytest.fail(f"TensorBoard did not serve (exit {proc.poll()}):\n{log.read()[-4000:]}")
                    time.sleep(0.3)
            assert "scalars" in listing, sorted(listing)
            assert listing["tb_pipeline"]["enabled"], listing["tb_pipeline"]
            assert listing["tb_pipeline"]["tab_name"] == "Pipeline Diff"
            with pytest.raises(urllib.error.HTTPError) as failed:
                _get_json(port, "/data/plugin/tb_pipeline/load_error")
            assert failed.value.code == 503
            message = json.loads(failed.value.read())
            assert "tb_pipeline_plugin.analysis" in message["reason"], message
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/plugin/tb_pipeline/index.js") as resp:
                script = resp.read().decode()
            assert "export async function render" in script and "tb_pipeline_plugin.analysis" in script
            if Path(CHROMIUM).exists():
                assert _tab_text_in_chromium(port).startswith("tb_pipeline_plugin failed to load.")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.seek(0)
            text = log.read()
    assert "tb_pipeline_plugin failed to load" in text and "ModuleNotFoundError" in text, text[-3000:]
