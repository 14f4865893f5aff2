"""Python client for the Wrenfall REST API (v2).

A small, dependency-free client built on the standard library. It covers jobs, runs and metrics, retries
requests that were rate limited, and can be configured from the environment:

    from wrenfall_client import WrenfallClient

    client = WrenfallClient.from_env()
    for job in client.iter_jobs(pool="gpu"):
        print(job.name, job.next_run_at)

Requires Python 3.10 or later.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

__version__ = "3.4.0"

DEFAULT_TIMEOUT_S = 30.0
FINAL_STATES = frozenset({"succeeded", "failed", "timed_out", "lost", "cancelled"})
CONCURRENCY_POLICIES = ("allow", "forbid", "replace")


class WrenfallError(Exception):
    """An error answered by the Wrenfall API, with its HTTP status, error code and request id."""

    def __init__(self, status: int, code: str, message: str, request_id: str | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.request_id = request_id


class RateLimitedError(WrenfallError):
    """Raised when a request is still rate limited after the client's own retries."""

    def __init__(self, message: str, retry_after_s: float, request_id: str | None = None):
        super().__init__(429, "rate_limited", message, request_id)
        self.retry_after_s = retry_after_s


@dataclass
class RetryPolicy:
    """How often and how patiently a failed run is retried.

    Durations use the API's notation, such as ``"30s"``, ``"1m"`` or ``"15m"``. The delay before attempt n
    is ``backoff_base * 2 ** (n - 2)``, never more than ``backoff_cap``.
    """

    max_attempts: int = 3
    backoff_base: str = "30s"
    backoff_cap: str = "15m"

    def __post_init__(self) -> None:
        if not 1 <= self.max_attempts <= 20:
            raise ValueError(f"max_attempts must be between 1 and 20, got {self.max_attempts}")


@dataclass
class Job:
    """A job definition as returned by the API."""

    id: str
    name: str
    schedule: str | None
    timezone: str = "UTC"
    pool: str = "default"
    status: str = "active"
    concurrency_policy: str = "allow"
    priority: int = 5
    next_run_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Job:
        return cls(
            id=data["id"],
            name=data["name"],
            schedule=data.get("schedule"),
            timezone=data.get("timezone", "UTC"),
            pool=data.get("pool", "default"),
            status=data.get("status", "active"),
            concurrency_policy=data.get("concurrency_policy", "allow"),
            priority=data.get("priority", 5),
            next_run_at=data.get("next_run_at"),
            raw=data,
        )


@dataclass
class Run:
    """One run of a job; ``attempt`` counts from 1."""

    id: str
    job_id: str
    state: str
    attempt: int = 1
    exit_code: int | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def is_final(self) -> bool:
        return self.state in FINAL_STATES

    @classmethod
    def from_api(cls, data: dict[str, Any]) -> Run:
        return cls(
            id=data["id"],
            job_id=data["job_id"],
            state=data["state"],
            attempt=data.get("attempt", 1),
            exit_code=data.get("exit_code"),
            started_at=data.get("started_at"),
            finished_at=data.get("finished_at"),
        )


class WrenfallClient:
    """Synchronous client for one Wrenfall namespace, identified by its API key."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = DEFAULT_TIMEOUT_S, max_retries: int = 3):
        if not api_key.startswith(("wf_live_", "wf_test_")):
            raise ValueError("api_key must start with 'wf_live_' or 'wf_test_'")
        self.base_url = base_url.rstrip("/") + "/api/v2"
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries

    @classmethod
    def from_env(cls) -> WrenfallClient:
        """Build a client from ``WRENFALL_URL`` and ``WRENFALL_API_KEY``."""
        try:
            return cls(os.environ["WRENFALL_URL"], os.environ["WRENFALL_API_KEY"])
        except KeyError as e:
            raise RuntimeError(f"set the {e.args[0]} environment variable") from e

    def _request(self, method: str, path: str, body: dict | None = None, idempotency_key: str | None = None) -> Any:
        """Send one request, waiting out ``429`` answers up to ``max_retries`` times."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    payload = response.read()
                    return json.loads(payload) if payload else None
            except urllib.error.HTTPError as e:
                problem = json.loads(e.read() or b"{}").get("error", {})
                if e.code == 429:
                    retry_after = float(e.headers.get("Retry-After", "1"))
                    if attempt < self.max_retries:
                        time.sleep(retry_after)
                        continue
                    raise RateLimitedError(problem.get("message", "rate limited"), retry_after) from e
                raise WrenfallError(
                    e.code, problem.get("code", "unknown"), problem.get("message", ""), problem.get("request_id")
                ) from e
        raise AssertionError("unreachable")

    def create_job(
        self,
        name: str,
        schedule: str,
        command: list[str] | None = None,
        image: str | None = None,
        timezone: str = "UTC",
        pool: str = "default",
        concurrency_policy: str = "allow",
        retry: RetryPolicy | None = None,
        priority: int = 5,
        idempotency_key: str | None = None,
    ) -> Job:
        """Create a job that runs ``command`` (or the container ``image``) on ``schedule``."""
        if (command is None) == (image is None):
            raise ValueError("pass exactly one of command or image")
        if concurrency_policy not in CONCURRENCY_POLICIES:
            raise ValueError(f"concurrency_policy must be one of {', '.join(CONCURRENCY_POLICIES)}")
        body: dict[str, Any] = {
            "name": name,
            "schedule": schedule,
            "timezone": timezone,
            "pool": pool,
            "concurrency_policy": concurrency_policy,
            "priority": priority,
            "retry": asdict(retry or RetryPolicy()),
        }
        body["command" if command is not None else "image"] = command if command is not None else image
        return Job.from_api(self._request("POST", "/jobs", body, idempotency_key))

    def get_job(self, job_id: str) -> Job:
        return Job.from_api(self._request("GET", f"/jobs/{job_id}"))

    def iter_jobs(self, pool: str | None = None, status: str | None = None, page_size: int = 100) -> Iterator[Job]:
        """Yield every job in the namespace, following ``next_cursor`` page by page."""
        cursor: str | None = None
        while True:
            query = [f"limit={page_size}"]
            if pool:
                query.append(f"pool={pool}")
            if status:
                query.append(f"status={status}")
            if cursor:
                query.append(f"cursor={cursor}")
            page = self._request("GET", "/jobs?" + "&".join(query))
            for item in page["items"]:
                yield Job.from_api(item)
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def pause_job(self, job_id: str) -> None:
        self._request("POST", f"/jobs/{job_id}/pause")

    def resume_job(self, job_id: str) -> None:
        self._request("POST", f"/jobs/{job_id}/resume")

    def trigger_run(self, job_id: str, env: dict[str, str] | None = None, priority: int | None = None) -> Run:
        """Start a run of the job now, optionally overriding its environment for this run only."""
        body: dict[str, Any] = {"env": env or {}}
        if priority is not None:
            body["priority"] = priority
        return Run.from_api(self._request("POST", f"/jobs/{job_id}/runs", body))

    def get_run(self, run_id: str) -> Run:
        return Run.from_api(self._request("GET", f"/runs/{run_id}"))

    def cancel_run(self, run_id: str) -> None:
        self._request("POST", f"/runs/{run_id}/cancel")

    def wait_for_run(self, run_id: str, poll_interval_s: float = 5.0, timeout_s: float = 3600.0) -> Run:
        """Poll a run until it reaches a final state; raise ``TimeoutError`` after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            run = self.get_run(run_id)
            if run.is_final:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id} still {run.state} after {timeout_s:.0f} s")
            time.sleep(poll_interval_s)

    def query_sql(self, sql: str) -> list[dict[str, Any]]:
        """Run a read-only SQL query over the ``runs`` and ``samples`` views and return the rows."""
        return self._request("POST", "/sql", {"query": sql})["rows"]


def report_metric(name: str, value: float, labels: dict[str, str] | None = None) -> None:
    """Record a custom metric from inside a running job.

    The worker sets ``WRENFALL_METRICS_FILE`` for every run; lines appended to it in the Prometheus text format
    are collected when the run ends.
    """
    path = os.environ.get("WRENFALL_METRICS_FILE")
    if not path:
        raise RuntimeError("report_metric() only works inside a Wrenfall run (WRENFALL_METRICS_FILE is unset)")
    label_text = ",".join(f'{key}="{val}"' for key, val in sorted((labels or {}).items()))
    series = f"{name}{{{label_text}}}" if label_text else name
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{series} {value}\n")
