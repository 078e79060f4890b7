"""Which part of the pipeline a sampled stack belongs to: read, decode, augment, collate/IPC,
unattributed or other, by what its functions do and where it sits in a DataLoader.

The DataLoader's fetcher (``torch.utils.data._utils.fetch``) is the boundary: what its list
comprehension calls is the dataset's ``__getitem__``, what ``fetch`` itself calls is the collate
function. Inside ``__getitem__`` the role of the function decides (``imgbench.profiling.roles``,
one table): the outermost frame with a role, from the user's code inward, names what the user
asked for (``Image.rotate`` transforms even where Pillow's C code runs below it), except
Pillow's deferred decode (``ImageFile.load``), which is decoding wherever it runs. C functions
called straight from the user's code leave no Python frame (``cv2.imdecode``, ``f.read()``), so
the user's innermost line decides then, by the calls it makes. Where nothing tells the role (a
line naming no known call, or calls of two roles), the sample is ``unattributed``: never a
guess. Outside ``__getitem__``, pickling, queues, shared memory and pinning are ``collate``
(collate/IPC: moving batches between processes); the rest is ``other``.
"""

from __future__ import annotations

import linecache
import re
import sysconfig
from collections import defaultdict
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from imgbench.profiling.roles import CONVERT, DECODE, OPENED, line_calls, rule_for
from imgbench.profiling.stacks import Frame, Stack

CATEGORIES = ("read", "decode", "augment", "collate", "unattributed", "other")
CATEGORY_TITLES = {
    "read": "read",
    "decode": "decode",
    "augment": "augment",
    "collate": "collate/IPC",
    "unattributed": "unattributed",
    "other": "other",
}
LOOKED_BACK = 3  # lines above a convert() call searched for the open/load it follows

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
# Keras's PyDataset adapter: the frames that call the user's ``__getitem__`` (a worker thread's
# or process's ``get_index``; the generators when it runs inline), the boundary as fetch is
KERAS_ADAPTER = "keras.src.trainers.data_adapters.py_dataset_adapter"
KERAS_CALLERS = frozenset({"get_index", "_finite_generator", "_infinite_generator", "__iter__"})
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


def waiting(frames: tuple[Frame, ...]) -> bool:
    """A thread blocked waiting (for a batch, an index, a connection), not working."""
    if not frames or frames[-1].name not in WAIT_LEAVES:
        return False
    return not any(f.name in IPC_WORK for f in frames)


def categorise(frames: tuple[Frame, ...]) -> str:
    """The category of one stack (outermost frame first); "wait" for a blocked thread."""
    return classify(frames)[0]


def classify(frames: tuple[Frame, ...]) -> tuple[str, str | None]:
    """The category of one stack and, for a decode, the decoding library (None if not told)."""
    if waiting(frames):
        return "wait", None
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
                return "collate", None
        if callee is None:
            return "other", None
        return _getitem_category(frames[last + 1 :], modules[last + 1 :])
    keras = [
        i
        for i, (f, m) in enumerate(zip(frames, modules, strict=True))
        if m == KERAS_ADAPTER and f.name.rsplit(".", 1)[-1] in KERAS_CALLERS
    ]
    if keras and keras[-1] + 1 < len(frames) and modules[keras[-1] + 1] != KERAS_ADAPTER:
        return _getitem_category(frames[keras[-1] + 1 :], modules[keras[-1] + 1 :])
    if any(_within(m, COLLATE_MODULES) for m in modules):
        return "collate", None
    return "other", None


def _getitem_category(frames: tuple[Frame, ...], modules: list[str]) -> tuple[str, str | None]:
    kept = [
        (f, m) for f, m in zip(frames, modules, strict=True) if not _within(m, TRANSPARENT_MODULES)
    ]
    if not kept:
        return "other", None
    rules = [rule_for(m, f.name) for f, m in kept]
    for (_, module), rule in zip(kept, rules, strict=True):
        if rule is not None and rule.anywhere:
            return rule.role or DECODE, rule.library or _library(module)
    for i, ((_, module), rule) in enumerate(zip(kept, rules, strict=True)):
        if rule is None or rule.role is None:
            continue
        if rule.role == CONVERT:
            caller = kept[i - 1][0] if i else None
            if caller is not None and opened_before(caller):
                return DECODE, rule.library
            return "augment", None
        if rule.role == DECODE:
            return DECODE, rule.library or _library(module)
        return rule.role, None
    user = [f for f, m in kept if not m]
    if user:
        return line_category(user[-1])
    return "unattributed", None


def _library(module: str) -> str:
    """The decoding library a module belongs to, as the advice names it."""
    return "torchvision.io" if module.startswith("torchvision.io") else module.split(".")[0]


def _source(frame: Frame, line: int | None = None) -> str:
    line = frame.line if line is None else line
    return linecache.getline(frame.file, line) if frame.file and line > 0 else ""


def line_category(frame: Frame) -> tuple[str, str | None]:
    """The category of the calls on a user's source line (read from the file, as tracebacks
    do): "unattributed" when it names no known call, or calls of two roles."""
    calls = line_calls(_source(frame))
    roles = {role for role, _ in calls}
    if len(roles) != 1:
        return "unattributed", None
    (role,) = roles
    library = next((lib for _, lib in calls if lib), None)
    return role, (library if role == DECODE else None)


def opened_before(frame: Frame) -> bool:
    """The caller's line, or one of the few above it in the same function, opens or loads an
    image: the ``convert()`` it makes finishes a decode (``Image.open(f).convert("RGB")``)."""
    for line in range(frame.line, max(frame.line - LOOKED_BACK, 0) - 1, -1):
        text = _source(frame, line)
        if OPENED.search(text):
            return True
        if line != frame.line and re.match(r"\s*(async\s+)?def\s", text):
            return False
    return False


def attribute(stacks: Iterable[Stack], roles: Mapping[int, str]) -> dict[str, Any]:
    """Shares of the sampled working time per category, over all processes and per role
    (``main``, ``workers``); ``roles`` maps a pid to its role. Samples of blocked threads are
    counted apart (``wait_samples``)."""
    totals: dict[str, float] = defaultdict(float)
    by_role: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    decoders: dict[str, int] = defaultdict(int)
    samples = waits = 0
    for stack in stacks:
        category, library = classify(stack.frames)
        if category == "wait":
            waits += 1
            continue
        if category == "decode":
            decoders[library or "unknown"] += 1
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
    """The category with the largest share ("unattributed" included), if any was sampled."""
    named = {c: s for c, s in shares.items() if c != "other" and s > 0}
    return max(named, key=named.__getitem__) if named else None
