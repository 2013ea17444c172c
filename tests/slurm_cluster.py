"""A real one-node Slurm cluster for the tests: munged + slurmctld + slurmd in a temp dir.

Debian's slurm-wlm and munge run this as root with no systemd and no cgroups:
proctrack/linuxproc, task/none, no accounting (so no sacct: jobs are read back with
`scontrol show job`, which keeps them for MinJobAge). The node has fake GPUs: gres.conf
points at character devices made with mknod (a copy of /dev/null's numbers). Regular files
are not scheduled properly and a gres without files drains the node; with devices, Slurm
binds one per job and sets CUDA_VISIBLE_DEVICES, exactly as on a real GPU node.

`SlurmCluster(tmp).start()` returns once `sinfo` shows the node idle; `.env` is what a
client (sbatch, squeue, scontrol) needs: SLURM_CONF. Run standalone to poke at it:
`python -m tests.slurm_cluster` starts one and waits for Ctrl-C.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol",
            "scancel", "sinfo")
GPUS = 2
GPU_TYPE = "v100"


def missing() -> str | None:
    """Why this machine cannot run the cluster, or None when it can."""
    if os.geteuid() != 0:
        return "a test Slurm cluster needs root (SlurmUser=root, mknod)"
    gone = [b for b in BINARIES if shutil.which(b, path=os.environ.get("PATH", "") +
                                                ":/usr/sbin:/sbin") is None]
    if gone:
        return f"Slurm/munge not installed ({', '.join(gone)} missing): " \
               "apt-get install slurm-wlm munge (make system-deps does it)"
    return None


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _sbin(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or name


class SlurmCluster:
    def __init__(self, root: Path | None = None, *, gpus: int = GPUS, cpus: int = 8) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="lb-slurm-"))
        self.node = socket.gethostname().split(".")[0]  # what `hostname -s` says
        self.gpus, self.cpus = gpus, cpus
        self.conf = self.root / "slurm.conf"
        self.procs: list[subprocess.Popen] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    # --- layout --------------------------------------------------------------------
    def _write(self) -> None:
        r = self.root
        (r / "munge").mkdir(mode=0o700, exist_ok=True)  # munged refuses looser modes
        (r / "run").mkdir(mode=0o755, exist_ok=True)
        for d in ("state", "spool", "log", "dev", "out"):
            (r / d).mkdir(exist_ok=True)
        os.chmod(r, 0o755)
        for i in range(self.gpus):
            dev = r / "dev" / f"nvidia{i}"
            if not dev.exists():
                # /dev/null's numbers: a char device Slurm can bind, that nothing uses.
                subprocess.run(["mknod", "-m", "666", str(dev), "c", "1", "3"], check=True)
        ctld_port, d_port = _free_ports(2)
        self.socket = r / "run" / "munge.socket.2"
        self.conf.write_text(f"""\
ClusterName=lbtest
SlurmctldHost={self.node}
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}
SlurmdPidFile={r / 'run' / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# The node claims more CPUs than a small CI machine has, so jobs without a GPU (and the
# 2-GPU tests) are bounded by the GPUs, not by the cores; config_overrides keeps it
# from being drained for that.
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=5
InactiveLimit=0
MessageTimeout=20
SchedulerParameters=sched_interval=1
GresTypes=gpu
NodeName={self.node} CPUs={self.cpus} RealMemory=1000 \
Gres=gpu:{GPU_TYPE}:{self.gpus} Feature={GPU_TYPE},fake State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")
        (r / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={self.node} Name=gpu Type={GPU_TYPE} "
            f"File={r / 'dev'}/nvidia[0-{self.gpus - 1}]\n")

    # --- lifecycle ---------------------------------------------------------------------
    def _spawn(self, argv: list[str], log: str) -> subprocess.Popen:
        out = open(self.root / "log" / log, "ab")  # noqa: SIM115 - lives as long as the daemon
        p = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        self.procs.append(p)
        return p

    def start(self, timeout_s: float = 60.0) -> SlurmCluster:
        self._write()
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            subprocess.run([_sbin("mungekey"), "--create", f"--keyfile={key}"], check=True,
                           capture_output=True)
        self._spawn([_sbin("munged"), "-F", "--force", f"--key-file={key}",
                     f"--socket={self.socket}", f"--pid-file={self.root / 'run/munged.pid'}",
                     f"--log-file={self.root / 'log/munged.log'}",
                     f"--seed-file={self.root / 'munge/munged.seed'}"], "munged.out")
        self._wait(lambda: self.socket.exists(), timeout_s, "munged's socket")
        self._spawn([_sbin("slurmctld"), "-D", "-c", "-f", str(self.conf)], "slurmctld.out")
        self._spawn([_sbin("slurmd"), "-D", "-N", self.node, "-f", str(self.conf)],
                    "slurmd.out")
        self._wait(lambda: self.node_state() == "idle", timeout_s, "the node to be idle")
        return self

    def node_state(self) -> str:
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, text=True,
                           capture_output=True, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else ""

    def _wait(self, ok, timeout_s: float, what: str) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if any(p.poll() is not None for p in self.procs):
                break
            if ok():
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"test Slurm cluster: timed out waiting for {what}; "
                           f"logs:\n{self.logs()}")

    def logs(self, tail: int = 30) -> str:
        out = []
        for f in sorted((self.root / "log").glob("*")):
            lines = f.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"--- {f.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def stop(self) -> None:
        # Cancel what is left first, so no worker outlives the cluster it ran under.
        subprocess.run(["scancel", "--full", "--user=root"], env=self.env,
                       capture_output=True, timeout=30)
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=15)
        self.procs.clear()

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), env=self.env, text=True, capture_output=True,
                              timeout=60, check=check)


if __name__ == "__main__":
    c = SlurmCluster().start()
    print(f"SLURM_CONF={c.conf}  (Ctrl-C stops it)", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        c.stop()
