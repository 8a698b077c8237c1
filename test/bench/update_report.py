"""Replace one marked section of the benchmark report with a results file.

    python3 update_report.py REPORT.md SECTION results.md

The section is delimited by <!-- SECTION:begin --> and <!-- SECTION:end -->.
"""
import sys

report, section, results = sys.argv[1:4]
begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
text = open(report).read()
body = open(results).read().rstrip() + "\n"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    text = f"{head}{begin}\n{body}{end}{tail}"
else:
    text = text.rstrip() + f"\n\n{begin}\n{body}{end}\n"
open(report, "w").write(text)
