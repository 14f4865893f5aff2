"""Example Wrenfall job: export yesterday's orders to CSV and report how many rows were written.

Run ``python nightly_export_job.py register`` once to create the job, after which Wrenfall runs
``python nightly_export_job.py run`` every night at 02:30 Berlin time on the ``default`` pool.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import sqlite3
import sys
import time
from pathlib import Path

from wrenfall_client import RetryPolicy, WrenfallClient, report_metric

JOB_NAME = "nightly-export"
EXPORT_DIR = Path(os.environ.get("EXPORT_DIR", "/srv/exports"))


def register() -> None:
    """Create the job; the idempotency key makes a second call return the same job instead of failing."""
    client = WrenfallClient.from_env()
    job = client.create_job(
        name=JOB_NAME,
        schedule="30 2 * * *",
        timezone="Europe/Berlin",
        command=["python", str(Path(__file__).resolve()), "run"],
        concurrency_policy="forbid",
        retry=RetryPolicy(max_attempts=5, backoff_base="1m", backoff_cap="20m"),
        idempotency_key=f"register-{JOB_NAME}-v1",
    )
    print(f"job {job.name} ({job.id}) next runs at {job.next_run_at}")


def export_orders(database: Path, day: dt.date) -> int:
    """Write one day's orders to ``EXPORT_DIR/orders-<day>.csv`` and return the number of rows."""
    EXPORT_DIR.mkdir(parents=True, exist_ok=True)
    target = EXPORT_DIR / f"orders-{day.isoformat()}.csv"
    partial = target.with_suffix(".csv.partial")
    with sqlite3.connect(database) as connection, open(partial, "w", newline="", encoding="utf-8") as handle:
        rows = connection.execute(
            "SELECT id, customer_id, total_cents, created_at FROM orders WHERE date(created_at) = ?",
            (day.isoformat(),),
        )
        writer = csv.writer(handle)
        writer.writerow(["id", "customer_id", "total_cents", "created_at"])
        count = 0
        for row in rows:
            writer.writerow(row)
            count += 1
    # Rename only when complete, so a retried attempt never leaves a half-written export behind.
    partial.replace(target)
    return count


def run() -> int:
    """Export yesterday (or ``EXPORT_DATE``, set when the run is triggered by hand) and report metrics."""
    day = dt.date.fromisoformat(os.environ.get("EXPORT_DATE", (dt.date.today() - dt.timedelta(days=1)).isoformat()))
    started = time.monotonic()
    rows = export_orders(Path(os.environ.get("ORDERS_DB", "/srv/data/orders.sqlite")), day)
    report_metric("rows_exported", rows, {"table": "orders"})
    report_metric("export_seconds", round(time.monotonic() - started, 3), {"table": "orders"})
    print(f"exported {rows} orders for {day}")
    return 0


if __name__ == "__main__":
    commands = {"register": register, "run": run}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(f"usage: {sys.argv[0]} register|run")
    sys.exit(commands[sys.argv[1]]() or 0)
