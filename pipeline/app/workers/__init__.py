"""Many pipelines, many workers: submit runs to the PostgreSQL queue and run them with workers
that hold leases and take over the runs of workers that died (needs the ``postgres`` extra)."""

from pipeline.app.workers._parent import PARENT_ENV, exit_with_parent
from pipeline.app.workers._remote import RemoteError, remote_url
from pipeline.app.workers._submit import CancelError, cancel, submit
from pipeline.app.workers._worker import TicketTracing, Worker, WorkerReport, worker_name
from pipeline.handlers.store.queue import RemoteSpec

__all__ = [
    "PARENT_ENV",
    "CancelError",
    "RemoteError",
    "RemoteSpec",
    "TicketTracing",
    "Worker",
    "WorkerReport",
    "cancel",
    "exit_with_parent",
    "remote_url",
    "submit",
    "worker_name",
]
