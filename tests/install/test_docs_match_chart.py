"""Every port, scrape job and namespace the docs and ``--help`` name is the one the chart produces: the
chart rendered with its defaults says what they are, and README.md, docs/*.md and every command's help
are searched for each mention."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from harness.apiserver import REPO_ROOT
from install.kit import find, template

from hami_core.cli import main

RELEASE, NAMESPACE = "hami-core", "hami-system"  # the release the docs install
HAMI_PORT = 9395  # HAMi's scheduler's metrics port: named only where the text speaks of HAMi
DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def helps() -> Iterator[tuple[str, str]]:
    """(command path, help text) of every ``hami`` command."""

    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[str, str]]:
        ctx = click.Context(command, info_name=" ".join(path))
        yield " ".join(path), command.get_help(ctx)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, [*path, name])

    yield from walk(main, ["hami"])


def texts() -> list[tuple[str, str]]:
    """(where, text) of every doc and every help, each help joined into lines as printed."""
    return [(str(p.relative_to(REPO_ROOT)), p.read_text()) for p in DOCS] + [
        (f"`{path} --help`", text) for path, text in helps()
    ]


def window(lines: list[str], index: int, before: int = 1) -> str:
    """The line and the ones before it: a sentence wrapped in a doc, an option's help wrapped by click."""
    return " ".join(lines[max(0, index - before) : index + 1])


def about_hami(lines: list[str], index: int) -> bool:
    """Whether the line, or the one before it, speaks of HAMi itself."""
    return bool(
        re.search(r"HAMi|hami-scheduler|HAMI_CHECK_HAMI_LEASE|check-hami-lease", window(lines, index))
    )


@pytest.fixture(scope="module")
def produced(helm: Path) -> dict[str, object]:
    """What the chart produces with its defaults, for the release the docs install."""
    objects = template(helm, "--set", "reporter.enabled=true", release=RELEASE, namespace=NAMESPACE)
    service = find(objects, "Service")
    (scheduler,) = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    (reporter,) = find(objects, "DaemonSet")["spec"]["template"]["spec"]["containers"]
    assert "--lease-namespace=$(POD_NAMESPACE)" in scheduler["args"]  # the Lease: the release namespace
    return {
        "scheduler_port": service["spec"]["ports"][0]["port"],
        "reporter_port": reporter["ports"][0]["containerPort"],
        # A ServiceMonitor's job is the Service's name; a PodMonitor's NAMESPACE/NAME.
        "scheduler_job": service["metadata"]["name"],
        "reporter_job": f"{NAMESPACE}/{find(objects, 'DaemonSet')['metadata']['name']}",
        "lease": f"{NAMESPACE}/{next(a for a in scheduler['args'] if a.startswith('--lease-name='))[13:]}",
    }


def test_the_chart_produces_what_the_docs_are_checked_against(produced: dict[str, object]) -> None:
    assert produced == {
        "scheduler_port": 9396,
        "reporter_port": 9397,
        "scheduler_job": "hami-core-scheduler",
        "reporter_job": "hami-system/hami-core-reporter",
        "lease": "hami-system/hami-core-scheduler",
    }


def test_every_port_named_is_the_charts(produced: dict[str, object]) -> None:
    ours = {produced["scheduler_port"], produced["reporter_port"]}
    wrong = []
    for where, text in texts():
        lines = text.splitlines()
        for index, line in enumerate(lines):
            for match in re.finditer(r"(?<![\d.])939\d(?!\d)", line):
                port = int(match.group())
                if port in ours or (port == HAMI_PORT and about_hami(lines, index)):
                    continue
                wrong.append(f"{where}:{index + 1}: {line.strip()}")
    assert not wrong, "ports the chart does not produce:\n" + "\n".join(wrong)


def test_every_scrape_job_named_is_the_charts(produced: dict[str, object]) -> None:
    ours = {produced["scheduler_job"], produced["reporter_job"]}
    wrong = [
        f"{where}: job={job}"
        for where, text in texts()
        for job in re.findall(r'\bjob=~?"([^"]+)"', text)
        if job not in ours
    ]
    assert not wrong, "\n".join(wrong)
    assert any(str(produced["scheduler_job"]) in text for _, text in texts())


def test_every_namespace_named_for_our_objects_is_the_release_namespace(produced: dict[str, object]) -> None:
    """kube-system is HAMi's (its Lease, its scheduler) or the default outside a pod, never where the chart
    puts ours; our Lease and accounts are named in the namespace the docs install into."""
    wrong = []
    for where, text in texts():
        lines = text.splitlines()
        for index, line in enumerate(lines):
            outside_a_pod = "outside a pod" in window(lines, index, before=3)
            if "kube-system" in line and not (about_hami(lines, index) or outside_a_pod):
                wrong.append(f"{where}:{index + 1}: {line.strip()}")
            for namespace in re.findall(r"(?<![/\w-])([a-z0-9-]+)/hami-core-scheduler\b", line):
                if namespace not in (NAMESPACE, "svc", "deployment"):  # kubectl's TYPE/NAME is no namespace
                    wrong.append(f"{where}:{index + 1}: Lease {namespace}/hami-core-scheduler")
            for namespace, account in re.findall(r"system:serviceaccount:([a-z0-9-]+):([a-z0-9-]+)", line):
                if namespace != NAMESPACE or not account.startswith("hami-core-"):
                    wrong.append(f"{where}:{index + 1}: account {namespace}:{account}")
    assert not wrong, "namespaces the chart does not use for our objects:\n" + "\n".join(wrong)
    assert any(str(produced["lease"]) in text for _, text in texts())
