"""Write the HTML report's captions, workflow/report/<name>.rst, from the output records
(classwise.outputs): one per output the report shows. A caption is edited in its record, then
this tool is rerun; tests/outputs/test_outputs.py fails while a caption file and its record differ.

    .venv/bin/python tools/write_report_captions.py          # write them, remove stale ones
"""

from __future__ import annotations

import sys
from pathlib import Path

from classwise.outputs import report_captions

REPORT = Path(__file__).resolve().parents[1] / "workflow" / "report"
#: The report's own pages beside the captions of the outputs.
NOT_CAPTIONS = {"workflow.rst"}


def main() -> int:
    captions = report_captions()
    for name, text in captions.items():
        path = REPORT / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(REPORT.parents[1])}")
    for path in sorted(REPORT.glob("*.rst")):
        if path.name not in captions and path.name not in NOT_CAPTIONS:
            path.unlink()
            print(f"removed {path.relative_to(REPORT.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
