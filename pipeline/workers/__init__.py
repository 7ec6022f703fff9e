"""Many pipelines, many workers: submit runs to the PostgreSQL queue and run them with workers
that hold leases and take over the runs of workers that died (needs the ``postgres`` extra)."""

from pipeline.workers._worker import Worker, WorkerReport, submit, worker_name

__all__ = ["Worker", "WorkerReport", "submit", "worker_name"]
