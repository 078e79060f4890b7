"""What the user points ``imgbench profile`` at: ``MODULE:FACTORY`` plus ``key=value`` arguments.

Every way this can go wrong (a module that does not import, a missing factory, a factory that
raises or returns something that is not a Dataset or DataLoader) is one :class:`TargetError`
whose message names the module or factory and the error, so the command prints one line.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from imgbench.errors import one_line
from imgbench.profiling.keras import is_keras_dataset
from imgbench.profiling.tfdata import is_tf_dataset

TF_HINT = (
    "; a tf.data pipeline or a Keras PyDataset runs in the TensorFlow environment:"
    " pass --env tensorflow"
)


class TargetError(ValueError):
    """The user's target could not be loaded or built; the message is one line."""


def parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """``["root=/data", "size=224"]`` -> ``{"root": "/data", "size": 224}``: Python literals where
    the value is one, the text otherwise."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise TargetError(f"--kw {pair!r}: expected key=value with a Python name as the key")
        try:
            value: Any = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        kwargs[key.strip()] = value
    return kwargs


def split_target(target: str) -> tuple[str, str]:
    module, sep, factory = target.partition(":")
    if not sep or not module or not factory:
        raise TargetError(f"{target!r}: expected MODULE:FACTORY, e.g. my_project.data:make_loader")
    return module, factory


def load_factory(target: str) -> Any:
    """Import ``MODULE`` (the current folder is importable, as for ``python -m``) and return
    its ``FACTORY`` attribute (dotted names reach into classes or objects)."""
    module_name, factory_name = split_target(target)
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # whatever the user's module raises while importing
        raise TargetError(
            f"module {module_name!r} does not import: {one_line(exc)}{_tf_hint(exc)}"
        ) from exc
    for part in factory_name.split("."):
        if not hasattr(obj, part):
            raise TargetError(f"module {module_name!r} has no {factory_name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        return obj  # a module-level Dataset or DataLoader object is accepted as it is
    return obj


def build_target(target: str, kwargs: Mapping[str, Any]) -> Any:
    """Call the factory with ``kwargs``; its result must be a torch Dataset or DataLoader."""
    factory = load_factory(target)
    if is_dataset_or_loader(factory):
        if kwargs:
            raise TargetError(f"{target} is an object, not a factory: it takes no --kw")
        return factory
    try:
        made = factory(**kwargs)
    except Exception as exc:
        raise TargetError(f"factory {target} raised {one_line(exc)}{_tf_hint(exc)}") from exc
    if not is_dataset_or_loader(made):
        raise TargetError(
            f"factory {target} returned {type(made).__name__}, not a torch Dataset or DataLoader"
            " or a tf.data.Dataset or a Keras PyDataset"
        )
    return made


def _tf_hint(exc: BaseException) -> str:
    """The way out when the user's code needs TensorFlow and this environment lacks it."""
    missing = isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in (
        "tensorflow",
        "keras",
    )
    return TF_HINT if missing else ""


def is_dataset_or_loader(obj: Any) -> bool:
    """A DataLoader, a torch Dataset, anything map-style (``__len__`` and ``__getitem__``), a
    tf.data.Dataset, or a Keras PyDataset (told before torch: the TensorFlow env has none)."""
    if is_tf_dataset(obj) or is_keras_dataset(obj):
        return True
    try:
        from torch.utils.data import DataLoader, Dataset, IterableDataset
    except ImportError as exc:
        if not (hasattr(obj, "__getitem__") and hasattr(obj, "__len__")):
            return False  # e.g. the TensorFlow environment, given neither kind
        raise TargetError(
            f"imgbench profile needs torch (pip install 'imgbench[torch]'): {one_line(exc)}"
        ) from exc

    if isinstance(obj, DataLoader | Dataset | IterableDataset):
        return True
    return not isinstance(obj, type) and hasattr(obj, "__getitem__") and hasattr(obj, "__len__")
