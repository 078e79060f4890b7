"""Which part of the pipeline a sampled stack belongs to: read, decode, augment, collate/IPC,
or other, by the libraries its frames come from and where it sits in a DataLoader.

The DataLoader's fetcher (``torch.utils.data._utils.fetch``) is the boundary: what its list
comprehension calls is the dataset's ``__getitem__``, what ``fetch`` itself calls is the collate
function. Inside ``__getitem__`` an augmentation library anywhere in the stack makes the sample
``augment`` (they call PIL and OpenCV for their operations), else a decoding library makes it
``decode``, else a file or object-store library ``read``. C functions called straight from the
user's code leave no Python frame (``cv2.imdecode``, ``f.read()``), so the user's innermost line
decides then, by the call it makes. Outside ``__getitem__``, pickling, queues, shared memory and
pinning are ``collate`` (collate/IPC: moving batches between processes).
"""

from __future__ import annotations

import linecache
import re
import sysconfig
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from imgbench.profiling.stacks import Frame, Stack

CATEGORIES = ("read", "decode", "augment", "collate", "other")
CATEGORY_TITLES = {
    "read": "read",
    "decode": "decode",
    "augment": "augment",
    "collate": "collate/IPC",
    "other": "other",
}

# module prefixes (dotted, as imported) per category
AUGMENT_MODULES = (
    "albumentations",
    "albucore",
    "torchvision.transforms",
    "kornia.augmentation",
    "kornia.geometry",
    "kornia.enhance",
    "kornia.color",
    "kornia.filters",
    "imgaug",
    "augly",
    "timm.data",
    "monai.transforms",
)
DECODE_MODULES = (
    "PIL",
    "cv2",
    "simplejpeg",
    "turbojpeg",
    "jpeg4py",
    "imageio",
    "skimage.io",
    "pyvips",
    "torchvision.io",
    "imagecodecs",
    "kornia_rs",
    "tifffile",
    "pillow_heif",
    "pillow_avif",
)
READ_MODULES = (
    "io",
    "_pyio",
    "pathlib",
    "genericpath",
    "posixpath",
    "shutil",
    "fsspec",
    "s3fs",
    "gcsfs",
    "boto3",
    "botocore",
    "s3transfer",
    "urllib3",
    "requests",
    "obstore",
    "lmdb",
    "h5py",
    "tarfile",
    "zipfile",
    "webdataset",
    "torchvision.datasets.folder.make_dataset",
)
COLLATE_MODULES = (
    "torch.utils.data._utils.collate",
    "torch.utils.data._utils.pin_memory",
    "torch.multiprocessing",
    "torch.storage",
    "torch._utils",
    "multiprocessing.reduction",
    "multiprocessing.queues",
    "multiprocessing.connection",
    "multiprocessing.resource_sharer",
    "pickle",
    "copyreg",
)
FETCH_MODULE = "torch.utils.data._utils.fetch"
# A thread blocked in one of these (innermost frame) waits: py-spy's --nonblocking mode does not
# always see such a thread as idle. Waiting for a batch, for an index or for a connection is not
# work and stays out of the shares; the handshakes and descriptor passing of torch's
# shared-memory batches are IPC work even where they block (the other side is busy with them).
WAIT_LEAVES = frozenset(
    {
        "Connection._recv",
        "Connection._poll",
        "wait",
        "Condition.wait",
        "Event.wait",
        "_PollLikeSelector.select",
        "select",
        "socket.accept",
        "SocketListener.accept",
        "sleep",
        "Thread._wait_for_tstate_lock",
        "Lock.acquire",
        "Semaphore.acquire",
    }
)
IPC_WORK = frozenset(
    {"answer_challenge", "deliver_challenge", "rebuild_storage_fd", "recv_handle", "DupFd.detach"}
)
TRANSPARENT_MODULES = ("imgbench.profiling",)  # our guard around the user's dataset

# the call on the user's own line, when a C function leaves no frame of its own
LINE_RULES = (
    (
        "decode",
        re.compile(
            r"imdecode|imread|decode_jpeg|decode_image|read_image|simplejpeg|turbojpeg|TurboJPEG|"
            r"jpeg4py|pyvips|Image\.open|\.convert\(|\.draft\(|cvtColor|iio\.|imageio"
        ),
    ),
    (
        "augment",
        re.compile(
            r"resize|crop|flip|rotate|warp|affine|blur|jitter|normali[sz]e|Normalize|transform|"
            r"augment|permute|transpose",
            re.IGNORECASE,
        ),
    ),
    ("read", re.compile(r"\bopen\(|\.read\(|read_bytes|read_file|fromfile|get_object|\.get\(b")),
)


LINE_LIBRARIES = (
    ("cv2.", "cv2"),
    ("simplejpeg", "simplejpeg"),
    ("TurboJPEG", "turbojpeg"),
    ("turbojpeg", "turbojpeg"),
    ("jpeg4py", "jpeg4py"),
    ("decode_jpeg", "torchvision.io"),
    ("decode_image", "torchvision.io"),
    ("imageio", "imageio"),
    ("iio.", "imageio"),
    ("Image.", "PIL"),
    (".convert(", "PIL"),
)


@cache
def _roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({paths["stdlib"], paths["platstdlib"]}, key=len, reverse=True))


@cache
def module_of(file: str) -> str:
    """The dotted module a frame's file belongs to: ``torch.utils.data._utils.fetch``,
    ``multiprocessing.queues``; "" for the user's own code."""
    if file.startswith("<frozen "):
        return file[len("<frozen ") : -1]
    found = re.search(r"[/\\](?:site|dist)-packages[/\\](.+)$", file)
    relative = found.group(1) if found else None
    if relative is None:
        for root in _roots():
            if file.startswith(root + "/"):
                relative = file[len(root) + 1 :]
                break
    if relative is None:
        return ""
    parts = re.split(r"[/\\]", relative)
    if parts[-1].endswith(".py"):
        parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    parts[0] = {"pillow.libs": "PIL", "opencv_python_headless.libs": "cv2"}.get(parts[0], parts[0])
    return ".".join(parts)


def _within(module: str, prefixes: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def library_category(module: str) -> str | None:
    if not module:
        return None
    if _within(module, AUGMENT_MODULES):
        return "augment"
    if _within(module, DECODE_MODULES):
        return "decode"
    if _within(module, READ_MODULES):
        return "read"
    return None


def line_category(frame: Frame) -> str | None:
    """The category of the call on a user's source line (read from the file, as tracebacks do)."""
    text = linecache.getline(frame.file, frame.line) if frame.file and frame.line else ""
    for category, pattern in LINE_RULES:
        if pattern.search(text):
            return category
    return None


def decode_library(frames: tuple[Frame, ...]) -> str | None:
    """The decoding library a decode sample ran in (top-level module), from its frames or, for a
    C call from the user's line, from that line."""
    for frame in frames:
        module = module_of(frame.file)
        if _within(module, DECODE_MODULES):
            return (
                module.split(".")[0] if not module.startswith("torchvision") else "torchvision.io"
            )
    for frame in reversed(frames):
        if not module_of(frame.file) and frame.line:
            text = linecache.getline(frame.file, frame.line)
            for token, library in LINE_LIBRARIES:
                if token in text:
                    return library
            return None
    return None


def waiting(frames: tuple[Frame, ...]) -> bool:
    """A thread blocked waiting (for a batch, an index, a connection), not working."""
    if not frames or frames[-1].name not in WAIT_LEAVES:
        return False
    return not any(f.name in IPC_WORK for f in frames)


def categorise(frames: tuple[Frame, ...]) -> str:
    """The category of one stack (outermost frame first); "wait" for a blocked thread."""
    if waiting(frames):
        return "wait"
    modules = [module_of(f.file) for f in frames]
    fetch = [i for i, m in enumerate(modules) if m == FETCH_MODULE]
    if fetch:
        last = fetch[-1]
        callee = frames[last + 1] if last + 1 < len(frames) else None
        in_getitem = "<listcomp>" in frames[last].name or "<genexpr>" in frames[last].name
        if callee is not None and not in_getitem:
            # fetch calls the collate function itself (and, for iterable datasets, next())
            named_collate = "collate" in callee.name.lower()
            if named_collate or _within(modules[last + 1], COLLATE_MODULES):
                return "collate"
        if callee is None:
            return "other"
        return _getitem_category(frames[last + 1 :], modules[last + 1 :])
    if any(_within(m, COLLATE_MODULES) for m in modules):
        return "collate"
    return "other"


def _getitem_category(frames: tuple[Frame, ...], modules: list[str]) -> str:
    kept = [
        (f, m) for f, m in zip(frames, modules, strict=True) if not _within(m, TRANSPARENT_MODULES)
    ]
    found = {library_category(m) for _, m in kept}
    for category in ("augment", "decode", "read"):
        if category in found:
            return category
    user = [f for f, m in kept if not m]
    if user:
        by_line = line_category(user[-1])
        if by_line is not None:
            return by_line
    return "other"


def attribute(stacks: Iterable[Stack], roles: Mapping[int, str]) -> dict[str, Any]:
    """Shares of the sampled working time per category, over all processes and per role
    (``main``, ``workers``); ``roles`` maps a pid to its role. Samples of blocked threads are
    counted apart (``wait_samples``)."""
    totals: dict[str, float] = defaultdict(float)
    by_role: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    decoders: dict[str, int] = defaultdict(int)
    samples = waits = 0
    for stack in stacks:
        category = categorise(stack.frames)
        if category == "wait":
            waits += 1
            continue
        if category == "decode":
            decoders[decode_library(stack.frames) or "unknown"] += 1
        totals[category] += stack.weight
        by_role[roles.get(stack.pid, "workers")][category] += stack.weight
        samples += 1
    whole = sum(totals.values())
    if not whole:
        return {"shares": {}, "samples": 0, "wait_samples": waits}
    return {
        "shares": {c: round(totals.get(c, 0.0) / whole, 4) for c in CATEGORIES},
        "samples": samples,
        "wait_samples": waits,
        "sampled_s": round(whole, 3),
        "decode_libraries": dict(sorted(decoders.items(), key=lambda kv: -kv[1])),
        "by_role": {
            role: {c: round(v.get(c, 0.0) / whole, 4) for c in CATEGORIES}
            for role, v in sorted(by_role.items())
        },
    }


def dominant(shares: Mapping[str, float]) -> str | None:
    """The category with the largest share, if any was sampled."""
    named = {c: s for c, s in shares.items() if c != "other" and s > 0}
    return max(named, key=named.__getitem__) if named else None
