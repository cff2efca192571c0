"""``flujo test --junit FILE``: the results as a JUnit XML report, the form CI servers read (Jenkins,
GitLab, GitHub Actions' test reporters): one ``<testsuite>`` (its ``name``, ``tests``, ``failures``,
``errors``, ``skipped`` and ``time``) inside ``<testsuites>``, one ``<testcase>`` per case file (``name``:
the file as shown, ``classname``: its folder with dots, ``file``, ``time``). A diverged case holds a
``<failure message=...>`` whose text is the diff (or the expectations not met); a case that failed (a broken
case file or blueprint, a run that failed) an ``<error message=...>``. Times are seconds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from xml.etree import ElementTree

from flujo_cli.case_replay import CaseResult

SUITE = "flujo test"
# What XML 1.0 cannot hold, even escaped: control characters (a model's reply may contain an escape
# sequence) and lone surrogates. Written as \xNN / \uNNNN instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def junit_xml(results: Sequence[CaseResult], *, seconds: float, timestamp: float | None = None) -> bytes:
    """The report of ``results`` (a run of ``seconds``), as UTF-8 XML with its declaration."""
    failures = sum(1 for result in results if result.status == "diverged")
    errors = sum(1 for result in results if result.status == "failed")
    counts = {"tests": str(len(results)), "failures": str(failures), "errors": str(errors)}
    root = ElementTree.Element("testsuites", {"name": SUITE, **counts, "time": _seconds(seconds)})
    started = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(timestamp if timestamp is not None else time.time()))
    suite = ElementTree.SubElement(
        root, "testsuite", {"name": SUITE, **counts, "skipped": "0", "time": _seconds(seconds), "timestamp": started}
    )
    for result in results:
        folder = Path(result.case).parent.as_posix()
        case = ElementTree.SubElement(
            suite,
            "testcase",
            {
                "name": _xml_text(result.case),
                "classname": _xml_text(folder.replace("/", ".") if folder not in ("", ".") else "cases"),
                "file": _xml_text(result.case),
                "time": _seconds(result.seconds),
            },
        )
        if result.status == "passed":
            continue
        element = "failure" if result.status == "diverged" else "error"
        problem = ElementTree.SubElement(case, element, {"message": _xml_text(_message(result)), "type": result.status})
        problem.text = _xml_text(_details(result))
    ElementTree.indent(root)
    text: bytes = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda found: ascii(found.group())[1:-1], text)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _message(result: CaseResult) -> str:
    return f"{result.status} {result.headline()}"


def _details(result: CaseResult) -> str:
    """The element's text: the diff, the expectations not met, the hint, the replayed run."""
    lines: list[str] = []
    if result.diff:
        lines.append(result.diff)
    lines += [f"expected {check.expectation}: {check.problem}" for check in result.expectations if not check.ok]
    if result.live_from is not None:
        lines.append(f"live from {result.live_from} (its calls made for real from there on)")
    if result.hint:
        lines.append(f"hint: {result.hint}")
    if result.run_id is not None:
        lines.append(f"replayed run: {result.run_id} (flujo lens show {result.run_id})")
    return "\n".join(lines)
