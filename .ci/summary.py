"""Print CI's closing line, `ci: N passed, M failed`, for the whole run.

Each argument is `name=STATUS` or `name=STATUS:PATH`, STATUS being `ok` or `failed` (the step's
exit status). Without PATH the step (ruff, say) counts as one check. With PATH, a test runner's
JUnit XML report, every test case counts; a missing or unreadable report, or a failed step whose
report shows no failing case (a crash, an error outside the cases), adds one failure, so the line
never says 0 failed for a run that failed. Skipped test cases count as neither.
Uses only the standard library: it runs with any python3.
"""

import sys
import xml.etree.ElementTree as ET


def count_junit(path: str) -> tuple[int, int]:
    """(passed, failed) of the test cases in one JUnit XML report."""
    passed = failed = 0
    for case in ET.parse(path).getroot().iter("testcase"):
        outcomes = {child.tag for child in case}
        if outcomes & {"failure", "error"}:
            failed += 1
        elif "skipped" not in outcomes:
            passed += 1
    return passed, failed


def main(arguments: list[str]) -> None:
    passed = failed = 0
    for argument in arguments:
        name, _, result = argument.partition("=")
        status, _, report = result.partition(":")
        if not report:
            step_passed, step_failed = (1, 0) if status == "ok" else (0, 1)
        else:
            try:
                step_passed, step_failed = count_junit(report)
            except (OSError, ET.ParseError) as error:
                print(f"{name}: no readable test report ({error})")
                step_passed, step_failed = 0, 0
            if status != "ok" and step_failed == 0:
                step_failed = 1
        # Worded unlike the closing line, so that only the last line reads as a run's total.
        print(f"- {name}: {step_passed} ok, {step_failed} failed")
        passed += step_passed
        failed += step_failed
    print(f"ci: {passed} passed, {failed} failed")


if __name__ == "__main__":
    main(sys.argv[1:])
