"""A Spark standalone cluster on loopback: a Master and Workers of the Spark pyspark ships.

For tests and benchmarks of the consumer on a real cluster (``CM_SPARK_MASTER=spark://...``).
Each process is ``spark-class`` with the Master or Worker class, on its own free loopback
port, its web UI on loopback too (``SPARK_LOCAL_IP``), its log and work directory under the
state directory. Workers get a bare environment: no virtualenv on their ``PATH`` and no
``PYTHONPATH``, so their own Python lacks this project, as on a cluster where nothing was
installed beside Spark; the consumer ships what its executors need (``executor_env.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
from pathlib import Path

from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.processes import (
    accepts_connections,
    free_port,
    start_process,
    stop_pid,
    wait_until_ready,
)

LOOPBACK = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_REGISTERED = "Successfully registered with master"
_BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark (it has ``bin/spark-class``)."""
    import pyspark

    return Path(pyspark.__file__).parent


def bare_env(work_dir: Path) -> dict[str, str]:
    """A worker's environment: Java and Spark, loopback, and nothing of this project."""
    env = {
        "PATH": _BARE_PATH,
        "HOME": str(work_dir),
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOG_DIR": str(work_dir),
        # Scratch of the daemons and of the executors a Worker starts: not /tmp.
        "SPARK_LOCAL_DIRS": str(work_dir / "local"),
        "SPARK_DAEMON_JAVA_OPTS": f"-Djava.io.tmpdir={work_dir}",
    }
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        env["JAVA_HOME"] = java_home
    elif shutil.which("java", path=_BARE_PATH) is None:
        raise InfrastructureError("java is not on /usr/bin or /bin: set JAVA_HOME")
    return env


@dataclasses.dataclass
class SparkProcess:
    """A Master or Worker process: its pid, port and log."""

    pid: int
    port: int
    log: Path

    def stop(self) -> None:
        stop_pid(self.pid)

    def kill(self) -> None:
        """SIGKILLs its process group: a Worker with the executors it launched."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        stop_pid(self.pid, grace_s=0)  # reaps it


@dataclasses.dataclass
class SparkCluster:
    """A running cluster; ``url`` is its master URL for ``CM_SPARK_MASTER``."""

    master: SparkProcess
    workers: list[SparkProcess]
    state_dir: Path

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master.port}"

    def add_worker(self, cores: int = 1, memory: str = "1g") -> SparkProcess:
        """Starts one more Worker and waits until the Master registered it."""
        index = len(self.workers)
        worker = start_worker(self.state_dir / f"worker-{index}", self.url, cores, memory)
        self.workers.append(worker)
        return worker

    def stop(self) -> None:
        """Stops every Worker (their executors go with them), then the Master."""
        for worker in self.workers:
            worker.stop()
        self.master.stop()


def _spark_class(main_class: str, *args: str) -> list[str]:
    return [str(spark_home() / "bin" / "spark-class"), main_class, *args]


def start_master(state_dir: Path, timeout_s: float = 60.0) -> SparkProcess:
    """Starts a Master on loopback and waits until it accepts connections."""
    state_dir.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    log = state_dir / "master.log"
    cmd = _spark_class(MASTER_CLASS, "--host", LOOPBACK, "--port", str(port))
    cmd += ["--webui-port", str(ui_port)]
    pid = _start(cmd, log, state_dir)
    wait_until_ready("spark master", pid, log, lambda: accepts_connections(port), timeout_s)
    return SparkProcess(pid, port, log)


def start_worker(
    work_dir: Path, master_url: str, cores: int = 1, memory: str = "1g", timeout_s: float = 60.0
) -> SparkProcess:
    """Starts a Worker with ``cores`` and ``memory`` and waits until it registered."""
    work_dir.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    log = work_dir / "worker.log"
    cmd = _spark_class(WORKER_CLASS, master_url, "--host", LOOPBACK, "--port", str(port))
    cmd += ["--webui-port", str(ui_port), "--cores", str(cores), "--memory", memory]
    cmd += ["--work-dir", str(work_dir / "work")]
    pid = _start(cmd, log, work_dir)
    wait_until_ready("spark worker", pid, log, lambda: _registered(log), timeout_s)
    return SparkProcess(pid, port, log)


def start_cluster(state_dir: Path, workers: int = 2, memory: str = "1g") -> SparkCluster:
    """A Master and ``workers`` one-core Workers; stopped again if any fails to start."""
    cluster = SparkCluster(start_master(state_dir / "master"), [], state_dir)
    try:
        for _ in range(workers):
            cluster.add_worker(memory=memory)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start(cmd: list[str], log: Path, work_dir: Path) -> int:
    return start_process(cmd, log, cwd=work_dir, env=bare_env(work_dir))


def _registered(log: Path) -> bool:
    with contextlib.suppress(OSError):
        return _REGISTERED in log.read_text(errors="replace")
    return False
