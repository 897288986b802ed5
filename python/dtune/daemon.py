"""A client of ``dtune daemon``'s HTTP API (docs/daemon.md) over urllib."""
import http.client
import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request

from ._lib import DtuneError, DTUNE_EINVAL, text, int_arg, id_arg, json_value
from .db import Schedule, shape_text

# the query parameters of GET /v1/schedules that are not variables
_RESERVED = ("workload", "target", "threads")
_TOKEN = re.compile(r"[\x21-\x7e]+")  # the daemon's tokens: printable bytes, no space


def _refuse(msg):
    raise DtuneError(msg, DTUNE_EINVAL)


def _query_text(params):
    """(name, value) pairs as a query string; every name and value checked
    (text(): a str, no NUL, UTF-8) and percent-encoded whole, so no value can
    add a parameter or change the path."""
    return "&".join(urllib.parse.quote(text(n, f"parameter name {n!r}"), safe="") + "=" +
                    urllib.parse.quote(text(v, what), safe="")
                    for n, v, what in params)


class DaemonClient:
    """``DaemonClient("http://127.0.0.1:8710", token=None)``.

    ``token`` is the daemon's API token (``--api-token-file``), sent as
    ``Authorization: Bearer TOKEN``; reads do not need it, POST and DELETE do
    when the daemon has one.
    """

    def __init__(self, url="http://127.0.0.1:8710", token=None, timeout=30):
        text(url, "url")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or \
                parts.fragment or not url.isascii() or not url.isprintable() or " " in url:
            _refuse(f"url must be an ASCII http:// or https:// address without a query, "
                    f"e.g. http://127.0.0.1:8710, not {url!r}")
        if token is not None and token != "":
            text(token, "token")
            if not _TOKEN.fullmatch(token):
                _refuse("token must be printable ASCII without spaces (the daemon's "
                        "--api-token-file holds such a token)")
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
                    not (math.isfinite(timeout) and timeout > 0):
                _refuse(f"timeout must be a positive number of seconds or None, not {timeout!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method, path, params=(), body=None, raw=False):
        """path: a route built from constants and id_arg() ids only; params:
        (name, value, what) triples; body: JSON-ready (json_value'd) data."""
        url = self.url + path
        if params:
            url += "?" + _query_text(params)
        data = None if body is None else \
            json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        try:
            req = urllib.request.Request(url, data=data, method=method)
        except ValueError as e:
            raise DtuneError(f"bad daemon url {url!r}: {e}", DTUNE_EINVAL) from None
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                payload = r.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            body_text = e.read().decode("utf-8", "replace")
            try:
                msg = json.loads(body_text)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = body_text.strip() or e.reason
            raise DtuneError(f"daemon: {msg} (HTTP {e.code})", status=e.code) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise DtuneError(f"cannot reach the dtune daemon at {self.url}: {reason}") from None
        if raw:
            return payload
        try:
            return json.loads(payload)
        except ValueError:
            raise DtuneError(f"daemon at {self.url}: {method} {path} answered with "
                             f"something that is not JSON: {payload[:200]!r}") from None

    def query(self, key, shape=None, *, target=None, threads=None, **values):
        """The Schedule of ``key`` for one shape: ``query(key, M=37)`` or ``query(key, "M=37")``;
        ``threads`` None or 0: the highest tuned."""
        params = [("workload", key, "key")]
        text(key, "key")
        seen = set()
        for item in shape_text(shape, values).split(","):
            name, eq, v = (x.strip() for x in item.partition("="))
            if not eq or not name:
                _refuse(f"shape: {item!r} is not NAME=VALUE")
            if name in _RESERVED:
                _refuse(f"shape: a variable named {name!r} cannot be queried over HTTP "
                        f"({', '.join(_RESERVED)} are the route's own parameters)")
            if name in seen:
                _refuse(f"shape: {name} is given twice")
            seen.add(name)
            params.append((name, v, "shape"))
        if target is not None:
            params.append(("target", target, "target"))
        t = 0 if threads is None else int_arg(threads, "threads", 0, 65536)
        if t:
            params.append(("threads", str(t), "threads"))
        j = self._request("GET", "/v1/schedules", params)
        try:
            return Schedule(kernel_id=j["kernel_id"], op=j.get("op", ""),
                            sketch=j.get("sketch", ""), annotation=j.get("annotation") or {},
                            predicted_ns=j.get("predicted_ns"), measured_ns=j.get("measured_ns"),
                            extrapolated=bool(j["extrapolated"]), threads=j["threads"],
                            shape=j["shape"], range=tuple(j["range"]), workload=j["workload"],
                            target=j["target"], source=j.get("source"), backend=j.get("backend"))
        except (KeyError, TypeError, AttributeError) as e:
            raise DtuneError(f"daemon at {self.url}: a schedule without {e}") from None

    def kernel_source(self, kernel_id):
        """The C source of kernel ``kernel_id`` (an int, or a str of decimal digits)."""
        return self._request("GET", f"/v1/kernels/{id_arg(kernel_id, 'kernel_id')}/source",
                             raw=True)

    def workloads(self):
        return self._request("GET", "/v1/workloads")

    def health(self):
        return self._request("GET", "/healthz")

    def submit(self, workload=None, model=None, **options):
        """Queues a tuning job (POST /v1/jobs): a workload key or a model spec dict,
        options as the API's fields (trials, time, strategy, threads, ...)."""
        body = dict(options)
        if workload is not None:
            text(workload, "workload")
            body["workload"] = workload
        if model is not None:
            body["model"] = model
        return self._request("POST", "/v1/jobs",
                             body={k: json_value(v, k) for k, v in body.items()})

    def job(self, job_id):
        return self._request("GET", f"/v1/jobs/{id_arg(job_id, 'job_id')}")

    def jobs(self, state=None):
        return self._request("GET", "/v1/jobs",
                             () if state is None else [("state", state, "state")])

    def cancel(self, job_id):
        return self._request("DELETE", f"/v1/jobs/{id_arg(job_id, 'job_id')}")
