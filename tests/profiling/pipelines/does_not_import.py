"""A user module with a typo in an import: `imgbench profile` must name it in one line."""

import imgbench_no_such_module_xyz  # noqa: F401


def make_dataset() -> None:
    return None
