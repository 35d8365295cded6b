"""The workflow on a real SLURM, not a mock: a one-node cluster on 127.0.0.1 started by the test.

The test installs Debian's `slurm-wlm` and `munge` when they are missing, starts munged,
slurmctld and slurmd for one node (no cgroups, no accounting storage, every state, spool and
log file in a temporary directory, its own ports and munge socket), runs a small config of the
demo through `--executor slurm --workflow-profile profiles/slurm-local`, checks that the
results equal a local run's, and stops the daemons it started, by PID, even on failure.

It skips, saying why, where it cannot run (not root, no apt-get, no package index); with the
environment variable CI=true every such reason is a failure instead: in CI it must run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np
import pytest
import yaml
from paths import REPO
from system_packages import apt_install, cannot_run, tail

CONFIG = REPO / "tests" / "configs" / "slurm.yaml"
PROFILE = REPO / "profiles" / "slurm-local"
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "srun", "sinfo", "scontrol", "scancel")
APT_PACKAGES = ("slurm-wlm", "munge")

pytestmark = [pytest.mark.workflow]


def _cannot_run(reason: str) -> NoReturn:
    cannot_run("SLURM test", reason)


def _missing_programs() -> list[str]:
    return [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None]


def _install_slurm() -> None:
    """apt-get update and install slurm-wlm and munge (we are root), or skip saying why."""
    apt_install("SLURM test", APT_PACKAGES, missing=_missing_programs(), timeout_s=600)
    missing = _missing_programs()
    if missing:
        _cannot_run(f"apt-get installed {' '.join(APT_PACKAGES)}, but {', '.join(missing)} are still missing")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def _slurm_conf(root: Path, node: str, cpus: int, memory_mb: int, munge_socket: Path) -> str:
    return f"""\
# One node on 127.0.0.1, written by tests/workflow/test_slurm.py; everything lives below {root}.
ClusterName=classwise-test
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/run/slurmctld.pid
SlurmdPidFile={root}/run/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups, no accounting storage: `sacct` fails, so the executor must use `squeue`.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# `squeue` must still list a finished job when the executor next asks; below 3x the first
# poll interval the plugin would fall back to `sacct`.
MinJobAge=600
InactiveLimit=0
KillWait=5
# How long a daemon may go unanswered before the other calls it down: on a machine busy with
# other work (CI's, or the rest of this suite) a few seconds' silence is load, not a failure.
SlurmctldTimeout=600
SlurmdTimeout=600
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class Cluster:
    root: Path
    node: str
    cpus: int
    env: dict[str, str]
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def run(self, *command: str, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout)

    def start(self, name: str, *command: str) -> None:
        log = (self.root / "log" / f"{name}.out").open("wb")
        self.processes[name] = subprocess.Popen(
            command, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            parts.append(f"--- {path.name}\n{tail(path.read_text(errors='replace'), 20)}")
        return "\n".join(parts)

    def wait_until(self, what: str, predicate) -> None:
        """Wait for ``predicate`` as long as every daemon runs (one that exits fails the test with
        the logs): how long the daemons take to start depends on the machine's load, not on them."""
        while True:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    pytest.fail(f"{name} exited with {process.returncode} while waiting for {what}\n{self.logs()}")
            if predicate():
                return
            time.sleep(0.5)

    def stop(self) -> None:
        """Cancel what is left on the cluster, then stop our daemons by PID, newest first."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            try:
                self.run("scancel", "--quiet", "--partition=test", timeout=15)
                deadline = time.monotonic() + 30
                while (
                    time.monotonic() < deadline
                    and self.run(
                        "squeue", "--noheader", "--states=PENDING,RUNNING,COMPLETING,CONFIGURING", timeout=15
                    ).stdout.strip()
                ):
                    time.sleep(1)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


def _node_state(cluster: Cluster) -> str:
    try:
        result = cluster.run("sinfo", "--noheader", "--Node", f"--nodes={cluster.node}", "--format=%t", timeout=10)
    except subprocess.TimeoutExpired:
        return ""
    return result.stdout.strip() if result.returncode == 0 else ""


def _check_plugin() -> None:
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        _cannot_run("snakemake-executor-plugin-slurm is not installed (pip install snakemake-executor-plugin-slurm)")


def _check_can_run() -> None:
    if sys.platform != "linux":
        _cannot_run(f"needs Linux to run slurmctld and slurmd, this is {sys.platform}")
    if os.geteuid() != 0:
        _cannot_run("needs root to install slurm-wlm and munge and to start munged, slurmctld and slurmd")
    _check_plugin()


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Cluster:
    _check_can_run()
    if _missing_programs():
        _install_slurm()

    # A short path: the munge socket's path must fit in a Unix socket address (108 bytes).
    root = Path(tempfile.mkdtemp(prefix="classwise-slurm-"))
    request.addfinalizer(lambda: shutil.rmtree(root, ignore_errors=True))
    for name in ("state", "spool", "run", "log", "munge", "bin"):
        (root / name).mkdir(mode=0o700)
    node = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    cpus = len(os.sched_getaffinity(0))
    munge_socket = root / "munge" / "munge.socket"
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, node, cpus, max(1, _memory_mb() - 512), munge_socket))
    # The executor's job step drops every SLURM_* variable (SLURM_CONF too) before it calls
    # srun inside the job; this srun puts our configuration back.
    srun = root / "bin" / "srun"
    srun.write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {shutil.which("srun")} "$@"\n')
    srun.chmod(0o755)
    env = dict(os.environ, SLURM_CONF=str(conf), PATH=f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}")
    for name in list(env):
        if name.startswith(("SBATCH_", "SRUN_", "SALLOC_")) or (name.startswith("SLURM_") and name != "SLURM_CONF"):
            del env[name]
    cluster = Cluster(root=root, node=node, cpus=cpus, env=env)
    request.addfinalizer(cluster.stop)

    cluster.start(
        "munged",
        "munged",
        "--foreground",
        "--force",
        f"--socket={munge_socket}",
        f"--key-file={key}",
        f"--pid-file={root / 'run' / 'munged.pid'}",
        f"--seed-file={root / 'munge' / 'munged.seed'}",
        f"--log-file={root / 'log' / 'munged.log'}",  # unused in the foreground: it logs to munged.out
    )
    cluster.wait_until("the munge socket", munge_socket.exists)
    cluster.start("slurmctld", "slurmctld", "-D", "-c", "-f", str(conf))
    cluster.start("slurmd", "slurmd", "-D", "-N", node, "-f", str(conf))
    cluster.wait_until(f"node {node} to be idle in sinfo", lambda: _node_state(cluster) == "idle")
    return cluster


# What both runs make: the two inference jobs (side by side on SLURM) and the clean shift's
# worst-class table (on SLURM one group job of a metric job and a table job). Explicit targets
# keep the test's size fixed while the workflow grows: every SLURM job pays the scheduler and
# two starts of Snakemake, and a group job runs its jobs one after the other.
TARGETS = [
    "results/tables/digits/original/clean/worst_class.csv",
    "results/logits/digits/linear/gaussian_noise_s3.npz",
]
GROUP_MEMBERS = 2  # compute_worst_class_metrics, aggregate_worst_class_tables


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        *args,
    ]


def snakemake(workdir: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(snakemake_command(workdir, *args), capture_output=True, text=True, env=env, cwd=workdir)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.Popen[bytes]:
    """The same targets run locally, started before the cluster fixture (apt-get, daemons) so
    that the two overlap; the test waits for it after the SLURM run."""
    _check_can_run()
    workdir = tmp_path_factory.mktemp("local")
    log = (workdir / "snakemake.log").open("wb")
    process = subprocess.Popen(
        snakemake_command(workdir, "--configfile", str(CONFIG), "--cores", "2", *TARGETS),
        cwd=workdir,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    log.close()
    process.workdir = workdir  # type: ignore[attr-defined]
    yield process  # type: ignore[misc]
    if process.poll() is None:
        process.kill()
        process.wait(timeout=30)


def _slurm_jobs(cluster: Cluster) -> list[dict[str, str]]:
    """Every job the test cluster has seen (MinJobAge keeps finished ones in squeue)."""
    fields = {"state": "%T", "cpus": "%C", "time_limit": "%l", "comment": "%k"}
    result = cluster.run("squeue", "--noheader", "--states=all", f"--format={'|'.join(fields.values())}")
    assert result.returncode == 0, result.stderr
    return [dict(zip(fields, line.split("|", len(fields) - 1))) for line in result.stdout.splitlines() if line.strip()]


def _slurm_logs(workdir: Path) -> str:
    return "\n".join(
        f"--- {path.relative_to(workdir)}\n{tail(path.read_text(errors='replace'), 25)}"
        for path in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log"))
    )


def _relative_files(root: Path, pattern: str) -> list[Path]:
    return sorted(path.relative_to(root) for path in root.glob(pattern) if path.is_file())


def test_a_run_on_slurm_equals_a_local_run(local_run: subprocess.Popen[bytes], cluster: Cluster, tmp_path: Path) -> None:
    on_slurm = tmp_path / "slurm"
    on_slurm.mkdir()
    started = time.monotonic()
    result = snakemake(
        on_slurm,
        "--configfile",
        str(CONFIG),
        "--executor",
        "slurm",
        "--workflow-profile",
        str(PROFILE),
        "--jobs",
        str(max(2, cluster.cpus)),
        *TARGETS,
        env=cluster.env,
    )
    on_slurm_s = time.monotonic() - started
    (tmp_path / "slurm.log").write_text(result.stdout + result.stderr)
    jobs = _slurm_jobs(cluster)
    assert result.returncode == 0, (
        f"{tail(result.stdout + result.stderr, 60)}\nSLURM jobs: {jobs}\n{_slurm_logs(on_slurm)}\n{cluster.logs()}"
    )
    local: Path = local_run.workdir  # type: ignore[attr-defined]
    assert local_run.wait() == 0, tail((local / "snakemake.log").read_text(errors="replace"), 60)
    print(f"\non SLURM {on_slurm_s:.0f} s; SLURM jobs: {jobs}")

    # Every job ran on SLURM and finished: training, the two inference jobs side by side, and
    # the metric and table jobs as one group job that asks for one CPU and their runtimes' sum.
    assert [job["state"] for job in jobs] == ["COMPLETED"] * len(jobs), jobs
    comments = [job["comment"] for job in jobs]
    assert len(jobs) == 4, comments
    assert sum("train_model" in comment for comment in comments) == 1, comments
    assert sum("infer" in comment for comment in comments) == 2, comments
    group = [job for job in jobs if "metrics" in job["comment"]]
    assert len(group) == 1, comments
    assert group[0]["cpus"] == "1", group
    assert group[0]["time_limit"] == f"{GROUP_MEMBERS * 10}:00", group

    # The same results: byte-identical tables and metrics, equal logits and sidecars.
    slurm_results, local_results = on_slurm / "results", local / "results"
    for pattern in ("tables/**/*", "metrics/**/*"):
        files = _relative_files(local_results, pattern)
        assert files, pattern
        assert _relative_files(slurm_results, pattern) == files, pattern
        for relative in files:
            assert (slurm_results / relative).read_bytes() == (local_results / relative).read_bytes(), relative
    logits = _relative_files(local_results, "logits/**/*.npz")
    assert [str(path) for path in logits] == ["logits/digits/linear/clean.npz", "logits/digits/linear/gaussian_noise_s3.npz"]
    assert _relative_files(slurm_results, "logits/**/*.npz") == logits
    for relative in logits:
        with np.load(slurm_results / relative) as ours, np.load(local_results / relative) as theirs:
            assert sorted(ours.files) == sorted(theirs.files), relative
            for name in theirs.files:
                np.testing.assert_array_equal(ours[name], theirs[name], err_msg=f"{relative}: {name}")
        sidecar = relative.with_suffix(".json")
        assert yaml.safe_load((slurm_results / sidecar).read_text()) == yaml.safe_load((local_results / sidecar).read_text())


def _local_rules() -> set[str]:
    """The workflow's `localrules:` (and `all`, which has no action and always runs locally)."""
    names = {"all"}
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]:
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if line.startswith("localrules:"):
                text = line.split(":", 1)[1]
                for following in lines[index + 1 :]:
                    if following.strip() and not following[0].isspace():
                        break
                    text += " " + following
                names |= {name for name in re.split(r"[\s,]+", text) if name}
    return names


def test_the_slurm_profiles_place_every_rule(tmp_path: Path) -> None:
    """Every rule is local, grouped or given resources of its own; no profile names a stale rule.

    Snakemake silently ignores --set-resources and --groups entries for rules that do not
    exist, and a new rule that is in no group becomes one SLURM job per wildcard combination.
    """
    _check_plugin()
    user = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    test = yaml.safe_load((PROFILE / "config.yaml").read_text())
    # Snakemake itself accepts the user profile (every key is an option of this version and plugin).
    result = snakemake(
        tmp_path, "--configfile", str(CONFIG), "--workflow-profile", str(REPO / "profiles" / "slurm"), "--list-rules"
    )
    assert result.returncode == 0, tail(result.stdout + result.stderr)
    rules = {line.split()[0] for line in result.stdout.splitlines() if line.strip() and not line[0].isspace()}
    assert {"infer", "train_model", "compute_worst_class_metrics"} <= rules, rules
    local = _local_rules()
    assert {"download_model", "prepare_dataset", "download_label_file"} <= local

    for name, profile in (("profiles/slurm", user), ("profiles/slurm-local", test)):
        assert profile["executor"] == "slurm", name
        assert profile["rerun-incomplete"] is True, f"{name} replaces profiles/default: repeat its rerun-incomplete"
        named = set(profile.get("set-resources", {})) | set(profile.get("set-threads", {})) | set(profile["groups"])
        assert not named - rules, f"{name} names rules the workflow does not have: {sorted(named - rules)}"
        assert not set(profile["groups"]) & local, f"{name} groups local rules"
        assert set(profile["group-components"]) == set(profile["groups"].values()), name
        # A group job runs its jobs one after the other: each takes the group's one serial slot.
        assert profile["resources"] == {"serial": 1} and profile["set-resource-scopes"] == {"serial": "local"}, name
        assert profile["default-resources"]["serial"] == 1, name
    gpu = {
        rule for rule, resources in user["set-resources"].items() if "gpu" in resources or "gpu" in str(resources.get("gres", ""))
    }
    assert {"infer", "train_model"} <= gpu
    assert all(user["set-threads"][rule] == user["set-resources"][rule]["cpus_per_gpu"] for rule in gpu)
    # A rule runs locally, in a group job, or as SLURM jobs of its own with resources chosen for it.
    unplaced = rules - local - set(user["groups"]) - set(user["set-resources"])
    assert not unplaced, (
        f"rules profiles/slurm does not place: {sorted(unplaced)}; add each to a group of "
        "profiles/slurm and profiles/slurm-local (small jobs), or give it set-resources in "
        "profiles/slurm (jobs long enough for a SLURM job of their own; GPU jobs)"
    )
    assert test["groups"] == user["groups"] and test["group-components"] == user["group-components"]
