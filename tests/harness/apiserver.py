"""A real kube-apiserver + etcd for the test suite, run as two local processes (no containers).

``start_apiserver(workdir)`` starts etcd and kube-apiserver on free loopback ports with generated
certificates, token identities (admin, the scheduler), the RBAC of :mod:`harness.rbac`, and reporters
that authenticate as a DaemonSet's pods do: a ServiceAccount token bound to a Pod on their node (the
TokenRequest API; nothing runs the Pod). ``stop_apiserver`` ends both. Every file lives under
``workdir``. The server keeps an audit log of every Node and Lease write (:mod:`harness.audit`), which
``ApiServer.audit_events`` reads back: the fault tests' oracles are the server's account, not a daemon's.

The binaries come from ``scripts/build-k8s.sh``; :func:`k8s_bin_dir` computes the same cache
directory from the same pins, so Python and the script agree on where they are.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from harness import audit, rbac

REPO_ROOT = Path(__file__).resolve().parents[2]
RECIPE = 1  # keep equal to RECIPE in scripts/build-k8s.sh
MODULES = ("tests/k8s/apiserver", "tests/k8s/etcd")
DEFAULT_REPORTER_NODES = ("node-a", "node-b", "node-c", "node-d")
START_TIMEOUT = 90.0
STOP_TIMEOUT = 15.0
PORT_ATTEMPTS = 3
RESTART_ATTEMPTS = 3
PR_SET_PDEATHSIG = 1  # prctl option, from <sys/prctl.h>


class ApiServerError(RuntimeError):
    """The API server could not be found, started or talked to."""


# -- where the binaries are -------------------------------------------------------------------------


def k8s_version(root: Path = REPO_ROOT) -> str:
    """The pinned k8s.io/kubernetes version, read from the build module's go.mod."""
    go_mod = root / MODULES[0] / "go.mod"
    match = re.search(r"^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ApiServerError(f"{go_mod}: no 'k8s.io/kubernetes vX.Y.Z' requirement")
    return match.group(1)


def k8s_bin_dir(root: Path = REPO_ROOT) -> Path:
    """The directory scripts/build-k8s.sh builds into for the current pins (same key, same root)."""
    digest = hashlib.sha256(f"recipe {RECIPE}\n".encode())
    for module in MODULES:
        for name in ("go.mod", "go.sum"):
            digest.update((root / module / name).read_bytes())
    cache = os.environ.get("HAMI_K8S_CACHE") or str(Path.home() / ".cache" / "hami-core" / "k8s")
    return Path(cache) / f"{k8s_version(root)}-{digest.hexdigest()[:12]}"


def find_binaries() -> Path:
    """The directory holding ``kube-apiserver`` and ``etcd``: ``$HAMI_K8S_BIN`` or the build cache."""
    override = os.environ.get("HAMI_K8S_BIN")
    where = Path(override) if override else k8s_bin_dir()
    source = "HAMI_K8S_BIN" if override else "the build cache"
    missing = [name for name in ("kube-apiserver", "etcd") if not os.access(where / name, os.X_OK)]
    if missing:
        raise ApiServerError(
            f"{' and '.join(missing)} not found in {where} ({source}); "
            "run `bash scripts/build-k8s.sh` to build them"
        )
    return where


# -- the running server -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiServer:
    """A running kube-apiserver: where it is, whom it trusts, and the processes behind it."""

    url: str
    ca_file: Path
    workdir: Path
    version: str
    #: identity -> bearer token; Pod-bound reporter tokens are added as they are made.
    tokens: dict[str, str]
    #: kube-apiserver, then etcd (replaced by ``restart_on_empty_etcd``).
    processes: list[subprocess.Popen[bytes]] = field(repr=False)
    #: How each was started: (name, argv, log), in start order (etcd first).
    commands: list[tuple[str, list[str], Path]] = field(default_factory=list, repr=False)
    reporter_nodes: tuple[str, ...] = DEFAULT_REPORTER_NODES

    def restart_on_empty_etcd(self) -> None:
        """Stop kube-apiserver and etcd, empty etcd's data directory, and start both again on the same
        ports: what an API server restarted on a lost (or wiped) etcd looks like to its clients. Every
        object is gone and resourceVersions start again from about 1, below what clients have seen.
        The harness's RBAC and the reporters' Pods and tokens are made again (the old Pod-bound tokens
        name Pods that no longer exist). The audit log goes on in the same file."""
        for proc in self.processes:
            _end(proc)
        shutil.rmtree(self.workdir / "etcd-data", ignore_errors=True)
        restart = 1
        while (self.workdir / f"etcd.restart{restart}-1.log").exists():
            restart += 1
        started: list[subprocess.Popen[bytes]] = []
        watched: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        for name, argv, first_log in self.commands:
            for attempt in range(1, RESTART_ATTEMPTS + 1):
                log = first_log.with_name(f"{first_log.stem}.restart{restart}-{attempt}{first_log.suffix}")
                proc = _spawn(argv, log)
                watched[name] = (proc, log)
                try:
                    if name == "etcd":
                        url = next(a.split("=", 1)[1] for a in argv if a.startswith("--listen-client-urls="))
                        _wait_until("etcd to be healthy again", partial(_etcd_health, url), watched)
                    else:
                        ready = partial(_readyz, self.url, self.ca_file)
                        _wait_until("kube-apiserver /readyz again", ready, watched)
                    break
                except ApiServerError:
                    # On a loaded machine kube-apiserver can give up on an etcd that is slow to answer
                    # right after its start ("etcd grpc connection not ready"): start it again.
                    _end(proc)
                    if attempt == RESTART_ATTEMPTS:
                        for running in started:
                            _end(running)
                        raise
            started.append(proc)
        self.processes[:] = list(reversed(started))
        for identity in [i for i in self.tokens if i.startswith(rbac.REPORTER_PREFIX)]:
            del self.tokens[identity]
            (self.workdir / "kubeconfigs" / f"{_file_name(identity)}.kubeconfig").unlink(missing_ok=True)
        _install_rbac(self, watched, self.reporter_nodes)

    @property
    def audit_log(self) -> Path:
        """The API server's audit log (JSON lines; Node and Lease writes only, see :mod:`harness.audit`)."""
        return self.workdir / "audit.log"

    def audit_events(
        self,
        *,
        user: str | None = None,
        resource: str | None = None,
        name: str | None = None,
        verbs: Iterable[str] | None = None,
        succeeded: bool | None = None,
    ) -> list[audit.AuditEvent]:
        """The logged Node and Lease writes so far, in the order written, that match every filter given
        (``user``: the authenticated user name, e.g. ``rbac.SCHEDULER_USER``; ``resource``: ``nodes`` or
        ``leases``; ``name``: the object's; ``verbs``: e.g. ``{"patch"}``; ``succeeded``: 2xx or not).
        A write whose response a client has seen is in the log (the log is written in blocking mode)."""
        events = audit.read_events(self.audit_log)
        return audit.select(events, user=user, resource=resource, name=name, verbs=verbs, succeeded=succeeded)

    def token(self, identity: str) -> str:
        """The bearer token of a pre-provisioned identity (``admin``, ``hami-scheduler``, a reporter)."""
        try:
            return self.tokens[identity]
        except KeyError:
            raise ApiServerError(
                f"unknown token identity {identity!r}; known: {sorted(self.tokens)}"
            ) from None

    def reporter(self, node: str) -> str:
        """The identity of ``node``'s reporter: the harness reporter ServiceAccount's token bound to a Pod
        on ``node`` (made on first use), exactly what the kubelet mounts into a DaemonSet's pod there."""
        identity = rbac.reporter_user(node)
        if identity not in self.tokens:
            pod = self.pod_on_node(rbac.REPORTER_NAMESPACE, rbac.REPORTER_SERVICE_ACCOUNT, node)
            token = self.token_request(rbac.REPORTER_NAMESPACE, rbac.REPORTER_SERVICE_ACCOUNT, pod=pod)
            self.add_token_identity(identity, token)
        return identity

    def pod_on_node(self, namespace: str, service_account: str, node: str) -> dict[str, Any]:
        """A Pod object of ``service_account`` with ``spec.nodeName`` = ``node`` (nothing runs it); returns
        it as the server stored it. Its name comes from the account and the node: asking twice returns the
        same Pod."""
        name = "pod-" + hashlib.sha256(f"{service_account}\n{node}".encode()).hexdigest()[:16]
        path = f"/api/v1/namespaces/{namespace}/pods"
        status, body = self.request("GET", f"{path}/{name}")
        if status == 200:
            return dict(body)
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "nodeName": node,
                "serviceAccountName": service_account,
                "automountServiceAccountToken": False,
                "containers": [{"name": "main", "image": "hami-core:harness"}],
            },
        }
        status, body = self.request("POST", path, pod)
        if status != 201:
            raise ApiServerError(
                f"creating pod {namespace}/{name} on node {node!r} answered {status}: {body}"
            )
        return dict(body)

    def token_request(
        self,
        namespace: str,
        service_account: str,
        *,
        pod: Mapping[str, Any] | None = None,
        expiration_seconds: int = 86_400,
    ) -> str:
        """A token of ``service_account`` from the TokenRequest API, bound to ``pod`` when given."""
        spec: dict[str, Any] = {"expirationSeconds": expiration_seconds}
        if pod is not None:
            name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
            spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid}
        status, body = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{service_account}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        if status != 201:
            raise ApiServerError(
                f"TokenRequest for serviceaccount {namespace}/{service_account} answered {status}: {body}"
            )
        return str(body["status"]["token"])

    def add_token_identity(self, identity: str, token: str) -> str:
        """Use ``token`` under the name ``identity`` (in ``kubeconfig``, ``request``); returns the name."""
        if identity in self.tokens or self._cert_paths(identity)[0].exists():
            raise ApiServerError(f"identity {identity!r} already exists")
        self.tokens[identity] = token
        return identity

    def add_identity(self, user: str, groups: Iterable[str] = ()) -> str:
        """Make a client-certificate identity (user name, groups) signed by the cluster CA; returns it."""
        if user in self.tokens:
            raise ApiServerError(f"identity {user!r} already exists as a token identity")
        if not self._cert_paths(user)[0].exists():
            _make_client_cert(self.ca_file.parent, _file_name(user), user, tuple(groups))
        return user

    def _cert_paths(self, identity: str) -> tuple[Path, Path]:
        clients, name = self.ca_file.parent / "clients", _file_name(identity)
        return clients / f"{name}.crt", clients / f"{name}.key"

    def _credentials(self, identity: str) -> dict[str, str]:
        if identity in self.tokens:
            return {"token": self.tokens[identity]}
        cert, key = self._cert_paths(identity)
        if not cert.exists():
            known = sorted(self.tokens)
            raise ApiServerError(f"unknown identity {identity!r}; known: {known} (or add_identity first)")
        return {"client-certificate": str(cert), "client-key": str(key)}

    def kubeconfig(self, identity: str = "admin") -> str:
        """Path of a kubeconfig file (written on first use) that authenticates as ``identity``."""
        credentials = self._credentials(identity)
        path = self.workdir / "kubeconfigs" / f"{_file_name(identity)}.kubeconfig"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "harness",
                        "cluster": {"server": self.url, "certificate-authority": str(self.ca_file)},
                    }
                ],
                "users": [{"name": identity, "user": credentials}],
                "contexts": [{"name": "harness", "context": {"cluster": "harness", "user": identity}}],
                "current-context": "harness",
            }
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(config, indent=2))  # JSON is YAML: every kubeconfig loader reads it
            tmp.replace(path)
        return str(path)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        identity: str = "admin",
        content_type: str | None = None,
    ) -> tuple[int, Any]:
        """One raw API call; returns (status, decoded JSON body or text). Never raises on HTTP errors."""
        credentials = self._credentials(identity)
        cert = (
            (credentials["client-certificate"], credentials["client-key"])
            if "client-key" in credentials
            else None
        )
        return _call(
            self.url, self.ca_file, credentials.get("token"), method, path, body, content_type, cert=cert
        )


def _file_name(identity: str) -> str:
    """A file name for an identity: readable, and distinct for distinct identities."""
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", identity)
    return f"{readable}-{hashlib.sha256(identity.encode()).hexdigest()[:8]}"


#: A raw call's bound in real time (``ApiServer.request``): generous, for a loaded machine shared with other
#: builds and test runs, where a correct server may take seconds to answer.
REQUEST_TIMEOUT = 60.0


def _call(
    url: str,
    ca_file: Path,
    token: str | None,
    method: str,
    path: str,
    body: Any = None,
    content_type: str | None = None,
    timeout: float = REQUEST_TIMEOUT,
    cert: tuple[str, str] | None = None,
) -> tuple[int, Any]:
    headers = {"Accept": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = content_type or "application/json"
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    context = ssl.create_default_context(cafile=str(ca_file))
    if cert is not None:
        context.load_cert_chain(*cert)
    try:
        with urllib.request.urlopen(req, context=context, timeout=timeout) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    text = raw.decode(errors="replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


# -- certificates and identities ---------------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    try:
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise ApiServerError("the openssl command is needed to make the API server's certificates") from None
    except subprocess.CalledProcessError as err:
        raise ApiServerError(
            f"openssl {args[0]} failed: {err.stderr.decode(errors='replace').strip()}"
        ) from None


def _make_pki(pki: Path) -> None:
    """CA, serving certificate for 127.0.0.1/localhost, and the service-account signing key pair."""
    pki.mkdir(parents=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=hami-core test CA",
        cwd=pki,
    )
    _openssl(
        "req",
        "-new",
        *ec,
        "-keyout",
        "serving.key",
        "-out",
        "serving.csr",
        "-subj",
        "/CN=kube-apiserver",
        cwd=pki,
    )
    (pki / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\nbasicConstraints=critical,CA:FALSE\n"
    )
    _openssl(
        "x509",
        "-req",
        "-in",
        "serving.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "serving.ext",
        "-out",
        "serving.crt",
        cwd=pki,
    )
    _openssl(
        "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", "sa.key", cwd=pki
    )
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def _make_client_cert(pki: Path, name: str, user: str, groups: tuple[str, ...]) -> None:
    """A client certificate for ``user`` (CN) in ``groups`` (O), as the API server reads them."""
    clients = pki / "clients"
    clients.mkdir(exist_ok=True)
    subject = "/CN=" + _subject_escape(user) + "".join("/O=" + _subject_escape(g) for g in groups)
    _openssl(
        "req",
        "-new",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        f"clients/{name}.key",
        "-out",
        f"clients/{name}.csr",
        "-subj",
        subject,
        cwd=pki,
    )
    (clients / f"{name}.ext").write_text("extendedKeyUsage=clientAuth\nbasicConstraints=critical,CA:FALSE\n")
    _openssl(
        "x509",
        "-req",
        "-in",
        f"clients/{name}.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        f"clients/{name}.ext",
        "-out",
        f"clients/{name}.crt",
        cwd=pki,
    )


def _subject_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("/", "\\/").replace("=", "\\=").replace("+", "\\+")


def _identities() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The token-file identities: identity -> (user name, groups). The identity name is the user name.

    Reporters are not here: they get Pod-bound ServiceAccount tokens once the server runs."""
    return {
        "admin": ("admin", ("system:masters",)),
        rbac.SCHEDULER_USER: (rbac.SCHEDULER_USER, ()),
    }


def _write_token_file(path: Path, people: Mapping[str, tuple[str, tuple[str, ...]]]) -> dict[str, str]:
    tokens: dict[str, str] = {}
    lines = []
    for identity, (user, groups) in people.items():
        tokens[identity] = secrets.token_hex(16)
        group_field = f',"{",".join(groups)}"' if groups else ""
        lines.append(f"{tokens[identity]},{user},{user}{group_field}\n")
    path.write_text("".join(lines))
    path.chmod(0o600)
    return tokens


# -- processes ---------------------------------------------------------------------------------------


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago (held together while choosing)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def _resolve_prctl() -> Any:
    """libc's prctl, looked up in the parent (a forked child should not load libraries)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _resolve_prctl()


def _die_with_parent() -> None:
    """In the child: get SIGKILL when the test process dies, so a killed pytest leaves no servers behind.

    The signal follows the thread that started the child, so start servers from a thread that lives
    as long as they do (pytest's main thread does).
    """
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if _PRCTL is not None else None,
        )


def _end(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process and everything in its session: TERM, wait, then KILL."""
    if proc.poll() is None:
        with _suppress_missing():
            os.killpg(proc.pid, signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_TIMEOUT)
    with _suppress_missing():
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group, if any
    proc.wait()


@contextmanager
def _suppress_missing() -> Iterator[None]:
    with suppress(ProcessLookupError):
        yield


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_until(what: str, ready: Any, procs: Mapping[str, tuple[subprocess.Popen[bytes], Path]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    last = "never answered"
    while time.monotonic() < deadline:
        for name, (proc, log) in procs.items():
            if proc.poll() is not None:
                raise ApiServerError(
                    f"{name} exited with {proc.returncode} before {what}; {log}:\n{_tail(log)}"
                )
        try:
            ok, last = ready()
            if ok:
                return
        except OSError as err:
            last = str(err)
        time.sleep(0.2)
    logs = "\n".join(f"--- {log}:\n{_tail(log)}" for _, log in procs.values())
    raise ApiServerError(f"timed out after {START_TIMEOUT:.0f}s waiting for {what} (last: {last})\n{logs}")


def start_apiserver(
    workdir: Path, bin_dir: Path | None = None, reporter_nodes: Iterable[str] = DEFAULT_REPORTER_NODES
) -> ApiServer:
    """Start etcd and kube-apiserver under ``workdir`` and return once ``/readyz`` is OK and RBAC exists."""
    bins = bin_dir or find_binaries()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    _make_pki(workdir / "pki")
    tokens = _write_token_file(workdir / "tokens.csv", _identities())
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return _launch(bins, workdir, dict(tokens), tuple(reporter_nodes))
        except ApiServerError as err:
            # A free port can be taken by another process before ours binds it: try new ones.
            if "address already in use" not in str(err) or attempt == PORT_ATTEMPTS:
                raise
            shutil.rmtree(workdir / "etcd-data", ignore_errors=True)
    raise AssertionError("unreachable")


def _launch(bins: Path, workdir: Path, tokens: dict[str, str], reporter_nodes: tuple[str, ...]) -> ApiServer:
    etcd_port, peer_port, secure_port = _free_ports(3)
    etcd_url, peer_url = f"http://127.0.0.1:{etcd_port}", f"http://127.0.0.1:{peer_port}"
    etcd_log, apiserver_log = workdir / "etcd.log", workdir / "kube-apiserver.log"
    etcd_argv = [
        str(bins / "etcd"),
        "--name=harness",
        f"--data-dir={workdir / 'etcd-data'}",
        f"--listen-client-urls={etcd_url}",
        f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=harness={peer_url}",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]
    etcd = _spawn(etcd_argv, etcd_log)
    started: list[subprocess.Popen[bytes]] = [etcd]
    try:
        watched = {"etcd": (etcd, etcd_log)}
        _wait_until("etcd to be healthy", lambda: _etcd_health(etcd_url), watched)
        pki = workdir / "pki"
        url = f"https://127.0.0.1:{secure_port}"
        apiserver_argv = [
            str(bins / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",  # a loopback address cannot back the kubernetes Service
            f"--secure-port={secure_port}",
            f"--cert-dir={pki}",
            f"--tls-cert-file={pki / 'serving.crt'}",
            f"--tls-private-key-file={pki / 'serving.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            f"--token-auth-file={workdir / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--disable-admission-plugins=ServiceAccount",  # no controller-manager makes default SAs
            f"--service-account-issuer={url}",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
            "--profiling=false",
            f"--audit-policy-file={audit.write_policy(workdir / 'audit-policy.json')}",
            f"--audit-log-path={workdir / 'audit.log'}",
            "--audit-log-mode=blocking",
            "--audit-log-format=json",
            # never rotated (the tests read the whole log): 0 would mean the default, 100 MB
            "--audit-log-maxsize=1000000",
            "--v=1",
        ]
        apiserver = _spawn(apiserver_argv, apiserver_log)
        started.append(apiserver)
        watched["kube-apiserver"] = (apiserver, apiserver_log)
        ca_file = pki / "ca.crt"
        admin = tokens["admin"]
        _wait_until("kube-apiserver /readyz", lambda: _readyz(url, ca_file), watched)
        status, version = _call(url, ca_file, admin, "GET", "/version")
        if status != 200:
            raise ApiServerError(f"GET /version answered {status}: {version}")
        server = ApiServer(
            url=url,
            ca_file=ca_file,
            workdir=workdir,
            version=version["gitVersion"],
            tokens=tokens,
            processes=[apiserver, etcd],
            commands=[("etcd", etcd_argv, etcd_log), ("kube-apiserver", apiserver_argv, apiserver_log)],
            reporter_nodes=reporter_nodes,
        )
        _install_rbac(server, watched, reporter_nodes)
        return server
    except BaseException:
        for proc in reversed(started):
            _end(proc)
        raise


def stop_apiserver(server: ApiServer) -> None:
    """Stop kube-apiserver, then etcd; waits for both process groups to be gone. Idempotent."""
    for proc in server.processes:
        _end(proc)


@contextmanager
def running_apiserver(workdir: Path, **kwargs: Any) -> Iterator[ApiServer]:
    """``start_apiserver`` for the length of a ``with`` block."""
    server = start_apiserver(workdir, **kwargs)
    try:
        yield server
    finally:
        stop_apiserver(server)


def _etcd_health(etcd_url: str) -> tuple[bool, str]:
    with urllib.request.urlopen(etcd_url + "/health", timeout=2) as resp:
        body = resp.read().decode(errors="replace")
    return json.loads(body).get("health") == "true", body


def _readyz(url: str, ca_file: Path) -> tuple[bool, str]:
    status, body = _call(url, ca_file, None, "GET", "/readyz", timeout=2)
    return status == 200, f"{status} {str(body)[-300:]}"


def _install_rbac(
    server: ApiServer,
    watched: Mapping[str, tuple[subprocess.Popen[bytes], Path]],
    reporter_nodes: tuple[str, ...],
) -> None:
    for collection, obj in rbac.objects():
        status, body = server.request("POST", collection, obj)
        if status not in (200, 201):
            raise ApiServerError(
                f"creating {obj['kind']} {obj['metadata']['name']} answered {status}: {body}"
            )
    for node in reporter_nodes:
        server.reporter(node)
    _wait_until("the reporter admission policy to be enforced", lambda: _policy_enforced(server), watched)


def _policy_enforced(server: ApiServer) -> tuple[bool, str]:
    """Admission policies load asynchronously: probe until a reporter's foreign-node patch is refused."""
    reporters = [name for name in server.tokens if name.startswith(rbac.REPORTER_PREFIX)]
    if not reporters:
        return True, "no reporters"
    probe = "harness-policy-probe"
    status, body = server.request("GET", f"/api/v1/nodes/{probe}")
    if status == 404:
        status, body = server.request("POST", "/api/v1/nodes", {"metadata": {"name": probe}})
        if status != 201:
            return False, f"creating the probe node answered {status}: {body}"
    patch = {"metadata": {"annotations": {"hami.io/probe": "x"}}}
    status, body = server.request(
        "PATCH",
        f"/api/v1/nodes/{probe}",
        patch,
        identity=reporters[0],
        content_type="application/merge-patch+json",
    )
    if status == 200:
        return False, "the policy did not refuse a foreign-node patch yet"
    if status != 403 or "own Node" not in str(body):
        return False, f"probe patch answered {status}: {body}"
    status, body = server.request("DELETE", f"/api/v1/nodes/{probe}")
    return status == 200, f"deleting the probe node answered {status}: {body}"
