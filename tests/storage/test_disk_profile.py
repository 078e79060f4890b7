"""The cheap HDD pass (profile ``disk``): the four formats cold and the DataLoader, nothing else;
not what make bench runs."""

from __future__ import annotations

import os

from imgbench.profiles import get_profile
from imgbench.stages import stage_cases


def test_the_disk_profile_is_the_packing_question_only() -> None:
    profile = get_profile("disk")
    assert stage_cases("read", profile) == [] and stage_cases("augment", profile) == []
    reads = [c for c in stage_cases("format", profile) if c.params["mode"] == "read"]
    assert {c.params["format"] for c in reads} == {"folder", "tar", "lmdb", "recordio"}
    assert {(c.params["cache_state"], c.params["order"]) for c in reads} == {("cold", "shuffled")}
    loaders = stage_cases("loader", profile)
    cores = os.cpu_count() or 2
    assert {(c.params["format"], c.params["workers"]) for c in loaders} == {
        (fmt, cores) for fmt in ("files", "tar", "lmdb", "recordio")
    }
    assert not profile.environments and not profile.allocators and not profile.extra_datasets
    # the default profile (make bench) is untouched: it keeps its own matrix
    assert get_profile("default").settings["max_images"] == 32
