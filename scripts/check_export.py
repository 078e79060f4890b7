"""Does an exported module reach its row's figure? Times ``imgbench export``'s module and
imgbench's own case alternately (ABAB, same images), and exits 1 when their medians differ by
more than 10%.

    .venv/bin/python scripts/check_export.py [--results results] [--case CASE_ID] [--rounds 3]

The row is the answer's pick (or ``--case``), exported as ``imgbench export`` writes it. Each
round measures the case through the engine (``imgbench.measure.manager.Manager``, the profile's
settings, the row's allocator: one row's figure, as a bench session takes it), then runs the
exported module's ``__main__`` in a fresh process over a folder of links to exactly the images
the case timed (its pool, ``imgbench.loaders.cases.make_source``; class = the entry's label).
Timings read what the host gives: run it alone (the project's timing lock), and read the
figure as one sample of a noisy comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from imgbench.controls import resolve
from imgbench.export.choose import choose, params_of, pipeline_of
from imgbench.export.module import render
from imgbench.loaders.cases import make_source, prepare_loader
from imgbench.loaders.pipeline import PipelineConfig
from imgbench.loaders.registry import get_loader
from imgbench.measure.case import Case, spec_case
from imgbench.measure.manager import Manager
from imgbench.measure.rounds import Measurement
from imgbench.profiles import ProfileChoice
from imgbench.report.cli import newest_group
from imgbench.results.store import load_results
from imgbench.stages import planner

TOLERANCE = 0.10
_RATE = re.compile(r"^images/s: ([0-9.]+)$", re.MULTILINE)


def case_of(row: dict[str, Any]) -> Case:
    """The loader case the row measured (a final row: the matrix case it re-measured)."""
    params = params_of(row)
    case = spec_case(
        get_loader(str(row["library"])),
        stage="loader",
        variant=str(row["variant"]),
        prepare=prepare_loader,
        params=params,
    )
    expected = str(row["case_id"]).removeprefix("final::")
    if case.case_id != expected:
        raise SystemExit(f"rebuilt {case.case_id}, not the row's {expected}")
    return case


def same_images(manager: Manager, row: dict[str, Any], folder: Path) -> int:
    """Links to the images the case times, one class folder per label; how many."""
    params = params_of(row)
    augment, recipe = pipeline_of(params)
    config = PipelineConfig(decoder=str(params["decoder"]), augment=augment, recipe=recipe)
    source = make_source(manager.context(), config)
    for i, (path, label) in enumerate(zip(source.paths, source.labels, strict=True)):
        target = Path(os.fsdecode(path))
        link = folder / f"class_{int(label):04d}" / f"{i:06d}_{target.name}"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    return len(source.paths)


def exported_rate(module: Path, folder: Path, rounds: int) -> float:
    done = subprocess.run(
        [sys.executable, str(module), str(folder), "--rounds", str(rounds)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    found = _RATE.search(done.stdout)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"the exported module failed: {done.stderr[-2000:]}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results")
    parser.add_argument("--case", default=None, help="a loader row's case id (default: the pick)")
    parser.add_argument(
        "--profile", default="default", help="the profile the row came from (its settings)"
    )
    parser.add_argument("--dataset", default=None, help="default: the row's dataset name")
    parser.add_argument("--rounds", type=int, default=3, help="ABAB pairs")
    parser.add_argument("--module-rounds", type=int, default=10, help="the module's own rounds")
    args = parser.parse_args()

    frame = load_results(args.results).frame
    choice = choose(frame if args.case else newest_group(frame), args.case)
    row = choice.row
    if choice.asked is not None:
        print(
            f"{choice.asked['case_id']} cannot be exported ({choice.why_not}): checking "
            f"the best exportable candidate"
        )
    case = case_of(row)
    allocator = str(row.get("allocator") or "glibc")
    profile = ProfileChoice(args.profile)
    settings = resolve(profile.resolve(), {"allocator": allocator, "worker_imports": "selected"})
    dataset = args.dataset or str(row["dataset_name"])
    manager = Manager(settings, planner(profile), dataset)
    imgbench_rates: list[float] = []
    module_rates: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="imgbench-check-export-") as tmp:
            module = Path(tmp) / "exported_loader.py"
            module.write_text(render(choice))
            folder = Path(tmp) / "images"
            images = same_images(manager, row, folder)
            print(f"{case.case_id}\n  {images} images of {dataset}, allocator {allocator}")
            for n in range(args.rounds):
                outcome = manager.measure(case)
                if not isinstance(outcome, Measurement) and "does not plan" in str(outcome):
                    # a case the profile does not plan (another profile's row): timed in this
                    # process instead of a worker of the preloaded server
                    manager.close()
                    settings = replace(settings, process_model="in-process")
                    manager = Manager(settings, planner(profile), dataset)
                    print("  (the profile does not plan the case: timed in this process)")
                    outcome = manager.measure(case)
                if not isinstance(outcome, Measurement):
                    raise SystemExit(f"imgbench's case did not measure: {outcome}")
                imgbench_rates.append(float(outcome.metrics()["images_per_s_median"]))
                module_rates.append(exported_rate(module, folder, args.module_rounds))
                print(
                    f"  pair {n + 1}: imgbench {imgbench_rates[-1]:.1f}, "
                    f"exported {module_rates[-1]:.1f} images/s",
                    flush=True,
                )
    finally:
        manager.close()
    ours, theirs = statistics.median(module_rates), statistics.median(imgbench_rates)
    ratio = ours / theirs
    print(
        json.dumps(
            {
                "case_id": case.case_id,
                "row_images_per_s": row.get("images_per_s_median"),
                "imgbench_images_per_s": imgbench_rates,
                "exported_images_per_s": module_rates,
                "ratio_of_medians": round(ratio, 4),
                "within": TOLERANCE,
            },
            indent=2,
            default=str,
        )
    )
    if abs(ratio - 1) > TOLERANCE:
        print(f"exported / imgbench = {ratio:.3f}: outside {TOLERANCE:.0%}")
        raise SystemExit(1)
    print(f"exported / imgbench = {ratio:.3f}: within {TOLERANCE:.0%}")


if __name__ == "__main__":
    main()
