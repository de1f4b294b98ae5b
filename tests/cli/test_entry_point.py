"""The installed ``hami`` entry point: one-line usage errors with exit 2, exit codes passed through."""

import subprocess
import sys
from pathlib import Path

HAMI = str(Path(sys.executable).with_name("hami"))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HAMI, *args], capture_output=True, text=True, timeout=60)


def test_bad_flag_value_is_one_line_and_exit_2() -> None:
    for args in (
        ["scheduler", "run", "--qps", "-1"],
        ["scheduler", "run", "--node-selector", "a"],
        ["scheduler", "run", "--http-listen", "nowhere"],
        ["scheduler", "run", "--resync", "x"],
        ["scheduler", "run", "--retry-period", "20"],
        ["nonsense"],
        ["reporter", "run", "--node-name", " "],
        ["reporter", "run", "--node-name", "n", "--interval", "0"],
        ["reporter", "run", "--node-name", "n", "--vendors", "no-such-driver"],
        ["scheduler", "run", "--handshake-window", "inf"],
        ["scheduler", "run", "--resync", "1e300"],
        ["scheduler", "run", "--qps", "1e9"],
        ["scheduler", "run", "--lease-name", "Bad Name!"],
        ["scheduler", "run", "--lease-namespace", "a.b"],
        ["scheduler", "run", "--node-selector", "é=ü"],
        ["scheduler", "run", "--resync", "nan"],
        ["scheduler", "run", "--http-listen", "127.0.0.1:\u0663"],
        ["reporter", "run", "--node-name", "n", "--retry-interval", "nan"],
    ):
        result = run(*args)
        assert result.returncode == 2, (args, result)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)


def test_env_var_values_are_checked_too() -> None:
    result = subprocess.run(
        [HAMI, "scheduler", "run"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HAMI_HANDSHAKE_WINDOW": "0"},
    )
    assert result.returncode == 2 and "--handshake-window" in result.stderr


def test_a_missing_kubeconfig_is_a_one_line_error_exit_2(tmp_path: Path) -> None:
    result = run("scheduler", "run", "--kubeconfig", str(tmp_path / "missing"), "--http-listen", "off")
    assert result.returncode == 2
    assert result.stderr == f"error: kubeconfig {tmp_path / 'missing'}: not found\n"


def test_help_and_version_exit_0() -> None:
    assert run("--help").returncode == 0
    version = run("--version")
    assert version.returncode == 0 and "hami" in version.stdout


def test_a_nonzero_exit_code_of_a_command_is_passed_through() -> None:
    result = run("codec", "decode", "--format", "legacy")  # empty stdin: no device separator
    assert result.returncode == 1 and result.stderr.startswith("error: ")


def test_an_address_that_cannot_be_listened_on_is_a_bad_flag(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "unreachable.kubeconfig"  # loads fine; never contacted before the bind fails
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    for address in ("192.0.2.1:80", "no-such-host.invalid:0"):
        result = run("scheduler", "run", "--kubeconfig", str(kubeconfig), "--http-listen", address)
        assert result.returncode == 2, (address, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"cannot listen on {address}" in lines[0], result.stderr


def test_help_lists_every_sub_command_in_order() -> None:
    from hami_core.cli import SUBCOMMANDS

    text = run("--help").stdout
    commands = text[text.index("Commands:") :].split("\n")[1:]
    assert [line.split()[0] for line in commands if line.strip()] == list(SUBCOMMANDS)


def test_a_command_loads_only_what_it_needs() -> None:
    """Sub-commands are imported when they run: the codec does not load the kubernetes client, and a
    bad scheduler flag is reported before the client and the scheduler are imported."""
    probe = (
        "import sys\n"
        "from hami_core.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:], standalone_mode=False)\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, file=sys.stderr)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'kubernetes', 'prometheus_client'}),\n"
        "      'hami_core.scheduler.daemon' in sys.modules)\n"
    )
    for args, loaded in (
        (["codec", "decode", "--help"], "[] False"),
        (["scheduler", "run", "--resync", "x"], "[] False"),
        (["vendors", "--json"], "[] False"),
    ):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                              timeout=60)  # fmt: skip
        assert done.stdout.strip().splitlines()[-1] == loaded, (args, done.stdout, done.stderr)


def test_output_that_cannot_be_written_is_one_line_and_exit_1() -> None:
    with open("/dev/full", "w") as full:  # every write fails: no space left on device
        result = subprocess.run([HAMI, "vendors"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert (result.returncode, result.stderr) == (
        1,
        "error: cannot write the output: No space left on device\n",
    )
