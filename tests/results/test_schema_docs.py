from pathlib import Path

from imgbench.results.schema import COLUMNS, SCHEMA_VERSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "results-schema.md"


def test_every_column_is_documented() -> None:
    text = DOC.read_text()
    assert f"version {SCHEMA_VERSION}" in text
    missing = [c for c in COLUMNS if f"`{c}`" not in text]
    assert not missing, f"document these columns in docs/results-schema.md: {missing}"
