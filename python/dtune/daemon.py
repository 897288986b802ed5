"""A client of ``dtune daemon``'s HTTP API (docs/daemon.md) over urllib."""
import json
import urllib.error
import urllib.parse
import urllib.request

from ._lib import DtuneError
from .db import Schedule, shape_text


class DaemonClient:
    """``DaemonClient("http://127.0.0.1:8710", token=None)``.

    ``token`` is the daemon's API token (``--api-token-file``), sent as
    ``Authorization: Bearer TOKEN``; reads do not need it, POST and DELETE do
    when the daemon has one.
    """

    def __init__(self, url="http://127.0.0.1:8710", token=None, timeout=30):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method, path, params=None, body=None, raw=False):
        url = self.url + path
        if params:
            url += "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                payload = r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                msg = json.loads(text)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = text.strip() or e.reason
            raise DtuneError(f"daemon: {msg} (HTTP {e.code})", status=e.code) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise DtuneError(f"cannot reach the dtune daemon at {self.url}: {reason}") from None
        return payload if raw else json.loads(payload)

    def query(self, key, shape=None, *, target=None, threads=None, **values):
        """The Schedule of ``key`` for one shape: ``query(key, M=37)`` or ``query(key, "M=37")``."""
        params = {"workload": key}
        for item in shape_text(shape, values).split(","):
            name, _, v = item.partition("=")
            params[name.strip()] = v.strip()
        if target is not None:
            params["target"] = target
        if threads is not None:
            params["threads"] = str(threads)
        j = self._request("GET", "/v1/schedules", params)
        return Schedule(kernel_id=j["kernel_id"], op=j.get("op", ""), sketch=j.get("sketch", ""),
                        annotation=j.get("annotation") or {}, predicted_ns=j.get("predicted_ns"),
                        measured_ns=j.get("measured_ns"), extrapolated=bool(j["extrapolated"]),
                        threads=j["threads"], shape=j["shape"], range=tuple(j["range"]),
                        workload=j["workload"], target=j["target"], source=j.get("source"),
                        backend=j.get("backend"))

    def kernel_source(self, kernel_id):
        return self._request("GET", f"/v1/kernels/{int(kernel_id)}/source", raw=True)

    def workloads(self):
        return self._request("GET", "/v1/workloads")

    def health(self):
        return self._request("GET", "/healthz")

    def submit(self, workload=None, model=None, **options):
        """Queues a tuning job (POST /v1/jobs): a workload key or a model spec dict,
        options as the API's fields (trials, time, strategy, threads, ...)."""
        body = dict(options)
        if workload is not None:
            body["workload"] = workload
        if model is not None:
            body["model"] = model
        return self._request("POST", "/v1/jobs", body=body)

    def job(self, job_id):
        return self._request("GET", f"/v1/jobs/{int(job_id)}")

    def jobs(self, state=None):
        return self._request("GET", "/v1/jobs", {"state": state} if state else None)

    def cancel(self, job_id):
        return self._request("DELETE", f"/v1/jobs/{int(job_id)}")
