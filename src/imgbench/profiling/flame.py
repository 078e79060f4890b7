"""One flame graph file for a whole profile: the speedscope documents py-spy wrote for each
configuration, merged into one (https://www.speedscope.app opens it; each thread of each
configuration is one profile, named ``workers=N · Process ... Thread ...``).

speedscope's file format keeps frames in one shared table that samples index; merging is
re-indexing those tables, which no library does for py-spy's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from imgbench.atomic import atomic_file

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def merge(documents: list[tuple[str, dict[str, Any]]], name: str) -> dict[str, Any]:
    """speedscope documents, each with a label, as one document."""
    frames: list[dict[str, Any]] = []
    index: dict[str, int] = {}
    profiles: list[dict[str, Any]] = []
    for label, doc in documents:
        mapping: list[int] = []
        for frame in doc.get("shared", {}).get("frames", []):
            key = json.dumps(frame, sort_keys=True)
            if key not in index:
                index[key] = len(frames)
                frames.append(frame)
            mapping.append(index[key])
        for profile in doc.get("profiles", []):
            samples = [[mapping[i] for i in sample] for sample in profile.get("samples", [])]
            profiles.append({**profile, "name": f"{label} · {profile.get('name', '')}"})
            profiles[-1]["samples"] = samples
    return {
        "$schema": SCHEMA_URL,
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": "imgbench profile (py-spy speedscope files, merged)",
    }


def write_flame_graph(parts: list[tuple[str, Path]], out: Path, name: str) -> Path | None:
    """Merge the speedscope files that exist into ``out`` (atomically); None if there are none."""
    documents = [(label, json.loads(p.read_text())) for label, p in parts if p.is_file()]
    if not documents:
        return None
    with atomic_file(out, "w", encoding="utf-8") as handle:
        json.dump(merge(documents, name), handle)
    return out
