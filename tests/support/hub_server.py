"""A small Hugging Face Hub-compatible HTTP server for publishing tests (loopback only, in memory).

It implements the endpoints that `huggingface_hub` (with HF_HUB_DISABLE_XET=1) and `datasets` call to push a
dataset version, tag and branch it, and download it back by tag, branch or commit sha:

    POST /api/repos/create                              create a repo (initial commit with .gitattributes)
    POST /api/validate-yaml                             accept any README metadata
    GET  /api/agent-harnesses                           an empty registry (huggingface_hub asks for it)
    GET  /api/{type}s/{repo}[/revision/{rev}]          repo info: sha + siblings
    GET  /api/{type}s/{repo}/refs                       branches, tags, pull requests
    POST /api/{type}s/{repo}/branch/{branch}            create a branch (409 when it exists)
    POST /api/{type}s/{repo}/tag/{rev}                  create a tag (409 when it exists)
    POST /api/{type}s/{repo}/preupload/{rev}            upload mode per file: always "regular" (inline base64)
    POST /api/{type}s/{repo}/commit/{rev}[?create_pr=1] git-style commit from an NDJSON payload
    GET  /api/{type}s/{repo}/commits/{rev}              commit history, newest first
    GET  /api/{type}s/{repo}/tree/{rev}[/{path}]        list files and folders (recursive or not)
    POST /api/{type}s/{repo}/paths-info/{rev}           info about given paths
    GET|HEAD /{type}s/{repo}/resolve/{rev}/{path}      file bytes with ETag / X-Repo-Commit (Range supported)

Revisions resolve as branch, tag, `refs/pr/N` or a full commit sha. Unknown requests answer 404 and are
recorded in `LocalHub.unknown_requests` (and logged) so a test can show which endpoint is missing.
Use it as a context manager (`with LocalHub() as hub: hub.url`); the server thread stops on exit, and the
`main()` entry point stops by itself after `--idle-timeout` seconds without requests.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import logging
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

logger = logging.getLogger(__name__)

_SHA = re.compile(r"^[0-9a-f]{40}$")
_REPO = r"(?P<type>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)"


def git_blob_sha(content: bytes) -> str:
    """The git blob id of `content` (what the Hub reports as a regular file's oid)."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Commit:
    sha: str
    parent: str | None
    files: dict[str, bytes]
    title: str
    date: str


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    pull_requests: list[str] = field(default_factory=list)  # refs/pr/N -> pull_requests[N - 1]

    def add_commit(self, parent: str | None, files: dict[str, bytes], title: str) -> Commit:
        date = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        digest = hashlib.sha1(f"{parent}\n{title}\n{date}\n{len(self.commits)}".encode())
        for path in sorted(files):
            digest.update(path.encode() + b"\0" + git_blob_sha(files[path]).encode())
        commit = Commit(digest.hexdigest(), parent, files, title, date)
        self.commits[commit.sha] = commit
        return commit

    def resolve(self, revision: str) -> Commit | None:
        revision = unquote(revision)
        for prefix, refs in (("refs/heads/", self.branches), ("refs/tags/", self.tags)):
            if revision.startswith(prefix):
                revision = revision[len(prefix) :]
                return self.commits.get(refs.get(revision, ""))
        if revision in self.branches:
            return self.commits[self.branches[revision]]
        if revision in self.tags:
            return self.commits[self.tags[revision]]
        match = re.fullmatch(r"refs/pr/(\d+)", revision)
        if match and 0 < int(match.group(1)) <= len(self.pull_requests):
            return self.commits[self.pull_requests[int(match.group(1)) - 1]]
        if _SHA.match(revision):
            return self.commits.get(revision)
        return None


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, **extra):
        super().__init__(message)
        self.status, self.message, self.code, self.extra = status, message, code, extra


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HubHTTPServer

    def log_message(self, format: str, *args) -> None:  # route the stdlib's access log to logging
        logger.debug("%s %s", self.address_string(), format % args)

    # -- plumbing ---------------------------------------------------------------------------------------------

    def _send(
        self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False
    ):
        self.send_response(status)
        headers = headers or {}
        headers.setdefault("Content-Type", "application/json")
        headers.setdefault("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _json(self, data, status: int = 200) -> None:
        self._send(status, json.dumps(data).encode())

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        hub = self.server.hub
        hub.last_request = time.monotonic()
        if self.headers.get("Authorization"):
            hub.authorizations.add(self.headers["Authorization"])
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        try:
            for pattern, route_method, handler in _ROUTES:
                match = pattern.fullmatch(url.path)
                if match and method in route_method:
                    with hub.lock:
                        handler(self, hub, method, query, **match.groupdict())
                    return
            hub.unknown_requests.append(f"{method} {self.path}")
            logger.warning("local hub: unknown request %s %s", method, self.path)
            raise HubError(404, f"no such endpoint: {method} {url.path}")
        except HubError as exc:
            headers = {"X-Error-Message": exc.message}
            if exc.code:
                headers["X-Error-Code"] = exc.code
            body = json.dumps({"error": exc.message, **exc.extra}).encode()
            self._send(exc.status, body, headers, head=method == "HEAD")

    def do_GET(self):  # noqa: N802 (stdlib naming)
        self._dispatch("GET")

    def do_HEAD(self):  # noqa: N802
        self._dispatch("HEAD")

    def do_POST(self):  # noqa: N802
        self._dispatch("POST")


# -- endpoint handlers ---------------------------------------------------------------------------------------


def _repo(hub: LocalHub, type: str, repo: str) -> Repo:
    found = hub.repos.get((type, repo))
    if found is None:
        raise HubError(404, f"Repository {repo} not found", "RepoNotFound")
    return found


def _commit(repo: Repo, rev: str) -> Commit:
    commit = repo.resolve(rev)
    if commit is None:
        raise HubError(404, f"Invalid rev id: {unquote(rev)}", "RevisionNotFound")
    return commit


def _folders(files: dict[str, bytes]) -> set[str]:
    return {"/".join(path.split("/")[:i]) for path in files for i in range(1, path.count("/") + 1)}


def _entry(commit: Commit, path: str, expand: bool) -> dict:
    if path in commit.files:
        entry = {
            "type": "file",
            "oid": git_blob_sha(commit.files[path]),
            "size": len(commit.files[path]),
            "path": path,
        }
    else:
        entry = {
            "type": "directory",
            "oid": hashlib.sha1(f"{commit.sha}:{path}".encode()).hexdigest(),
            "size": 0,
            "path": path,
        }
    if expand:
        entry["lastCommit"] = {"id": commit.sha, "title": commit.title, "date": commit.date}
    return entry


def create_repo(handler: _Handler, hub: LocalHub, method, query):
    payload = json.loads(handler._body() or b"{}")
    repo_type = payload.get("type") or "model"
    repo_id = (
        f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
    )
    if "/" not in repo_id:
        repo_id = f"local-user/{repo_id}"
    key = (f"{repo_type}s", repo_id)
    prefix = "" if repo_type == "model" else f"{repo_type}s/"
    url = f"{hub.url}/{prefix}{repo_id}"
    if (
        key in hub.repos
    ):  # like the Hub: 409, and the body still carries the url (create_repo(exist_ok=True) reads it)
        raise HubError(409, "You already created this repo", url=url)
    repo = Repo(repo_id, repo_type)
    initial = repo.add_commit(
        None, {".gitattributes": b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"}, "initial commit"
    )
    repo.branches["main"] = initial.sha
    hub.repos[key] = repo
    handler._json({"url": url, "name": repo_id, "id": repo_id})


def agent_harnesses(handler: _Handler, hub, method, query):
    handler._json({"standardEnvVars": [], "harnesses": {}})  # huggingface_hub's user-agent registry: empty


def validate_yaml(handler: _Handler, hub, method, query):
    handler._body()
    handler._json({"errors": [], "warnings": []})


def repo_info(handler: _Handler, hub: LocalHub, method, query, type, repo, rev="main"):
    found = _repo(hub, type, repo)
    commit = _commit(found, rev)
    handler._json(
        {
            "_id": hashlib.sha1(repo.encode()).hexdigest()[:24],
            "id": found.repo_id,
            "author": found.repo_id.split("/")[0],
            "sha": commit.sha,
            "lastModified": commit.date,
            "private": False,
            "disabled": False,
            "gated": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": [
                {"rfilename": path, "size": len(data)} for path, data in sorted(commit.files.items())
            ],
        }
    )


def list_refs(handler: _Handler, hub: LocalHub, method, query, type, repo):
    found = _repo(hub, type, repo)

    def refs(names: dict[str, str], prefix: str) -> list[dict]:
        return [
            {"name": name, "ref": f"{prefix}{name}", "targetCommit": sha}
            for name, sha in sorted(names.items())
        ]

    data = {
        "branches": refs(found.branches, "refs/heads/"),
        "converts": [],
        "tags": refs(found.tags, "refs/tags/"),
    }
    data["pullRequests"] = [
        {"name": f"refs/pr/{n}", "ref": f"refs/pr/{n}", "targetCommit": sha}
        for n, sha in enumerate(found.pull_requests, start=1)
    ]
    handler._json(data)


def create_branch(handler: _Handler, hub: LocalHub, method, query, type, repo, branch):
    found = _repo(hub, type, repo)
    payload = json.loads(handler._body() or b"{}")
    branch = unquote(branch)
    if branch in found.branches:
        raise HubError(409, f"Reference refs/heads/{branch} already exists")
    found.branches[branch] = _commit(found, payload.get("startingPoint") or "main").sha
    handler._json({})


def create_tag(handler: _Handler, hub: LocalHub, method, query, type, repo, rev):
    found = _repo(hub, type, repo)
    payload = json.loads(handler._body() or b"{}")
    tag = payload.get("tag")
    if not tag:
        raise HubError(400, "missing tag")
    if tag in found.tags:
        raise HubError(409, f"Tag {tag} already exists")
    found.tags[tag] = _commit(found, rev).sha
    handler._json({})


def preupload(handler: _Handler, hub: LocalHub, method, query, type, repo, rev):
    found = _repo(hub, type, repo)
    payload = json.loads(handler._body() or b"{}")
    commit = found.resolve(rev)  # a new branch name may not exist yet: then no file exists either
    files = []
    for item in payload.get("files", []):
        existing = commit.files.get(item["path"]) if commit else None
        files.append(
            {
                "path": item["path"],
                "uploadMode": "regular",
                "shouldIgnore": False,
                "oid": git_blob_sha(existing) if existing is not None else None,
            }
        )
    handler._json({"files": files, "commitOid": commit.sha if commit else None})


def commit(handler: _Handler, hub: LocalHub, method, query, type, repo, rev):
    found = _repo(hub, type, repo)
    rev = unquote(rev)
    base = _commit(found, rev)
    create_pr = query.get("create_pr", ["0"])[0] in ("1", "true", "True")
    if not create_pr and rev not in found.branches:
        raise HubError(400, f"can only commit to a branch, not {rev}", "RevisionNotFound")
    files = dict(base.files)
    header = None
    for line in handler._body().splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        key, value = item["key"], item["value"]
        if key == "header":
            header = value
            parent = value.get("parentCommit")
            if parent and parent != base.sha:
                raise HubError(412, f"parent commit {parent} is not the head of {rev} ({base.sha})")
        elif key == "file":
            if value.get("encoding") != "base64":
                raise HubError(400, f"unsupported encoding {value.get('encoding')!r}")
            files[value["path"]] = base64.b64decode(value["content"])
        elif key == "deletedFile":
            if value["path"] not in files:
                raise HubError(404, f"A file with this name doesn't exist: {value['path']}", "EntryNotFound")
            del files[value["path"]]
        elif key == "deletedFolder":
            prefix = value["path"].rstrip("/") + "/"
            for path in [p for p in files if p.startswith(prefix)]:
                del files[path]
        else:  # lfsFile: never asked for, since preupload answers "regular" for every file
            raise HubError(400, f"unsupported commit operation {key!r}")
    if header is None or not header.get("summary"):
        raise HubError(400, "commit payload has no header with a summary")
    new = found.add_commit(base.sha, files, header["summary"])
    prefix = "" if found.repo_type == "model" else f"{found.repo_type}s/"
    pr_url = None
    if create_pr:
        found.pull_requests.append(new.sha)
        pr_url = f"{hub.url}/{prefix}{found.repo_id}/discussions/{len(found.pull_requests)}"
    else:
        found.branches[rev] = new.sha
    handler._json(
        {
            "commitUrl": f"{hub.url}/{prefix}{found.repo_id}/commit/{new.sha}",
            "commitOid": new.sha,
            "pullRequestUrl": pr_url,
        }
    )


def list_commits(handler: _Handler, hub: LocalHub, method, query, type, repo, rev):
    found = _repo(hub, type, repo)
    commit_, history = _commit(found, rev), []
    while commit_ is not None:  # newest first, following first parents like `git log`
        history.append(
            {
                "id": commit_.sha,
                "title": commit_.title,
                "message": "",
                "authors": [{"user": "local-user"}],
                "date": commit_.date,
            }
        )
        commit_ = found.commits.get(commit_.parent) if commit_.parent else None
    handler._json(history)


def tree(handler: _Handler, hub: LocalHub, method, query, type, repo, rev, path=""):
    found = _repo(hub, type, repo)
    commit_ = _commit(found, rev)
    path = unquote(path or "").strip("/")
    recursive = query.get("recursive", ["False"])[0].lower() in ("1", "true")
    expand = query.get("expand", ["False"])[0].lower() in ("1", "true")
    folders = _folders(commit_.files)
    if path and path not in folders:
        raise HubError(404, f"{path} does not exist on {rev}", "EntryNotFound")
    prefix = f"{path}/" if path else ""
    entries = []
    for candidate in sorted(folders | set(commit_.files)):
        if not candidate.startswith(prefix):
            continue
        if recursive or "/" not in candidate[len(prefix) :]:
            entries.append(_entry(commit_, candidate, expand))
    handler._json(entries)


def paths_info(handler: _Handler, hub: LocalHub, method, query, type, repo, rev):
    found = _repo(hub, type, repo)
    commit_ = _commit(found, rev)
    body = handler._body()
    if handler.headers.get("Content-Type", "").startswith("application/json"):
        payload = json.loads(body or b"{}")
        paths, expand = payload.get("paths", []), bool(payload.get("expand"))
    else:
        form = parse_qs(body.decode())
        paths, expand = form.get("paths", []), form.get("expand", ["False"])[0].lower() == "true"
    folders = _folders(commit_.files)
    handler._json(
        [
            _entry(commit_, p.strip("/"), expand)
            for p in paths
            if p.strip("/") in commit_.files or p.strip("/") in folders
        ]
    )


def resolve(handler: _Handler, hub: LocalHub, method, query, type, repo, rev, path):
    found = _repo(hub, type, repo)
    commit_ = _commit(found, rev)
    path = unquote(path)
    if path not in commit_.files:
        raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
    data = commit_.files[path]
    headers = {
        "Content-Type": "application/octet-stream",
        "ETag": f'"{git_blob_sha(data)}"',
        "X-Repo-Commit": commit_.sha,
        "Accept-Ranges": "bytes",
    }
    status = 200
    byte_range = re.fullmatch(r"bytes=(\d*)-(\d*)", handler.headers.get("Range", ""))
    if byte_range and data:
        first, last = byte_range.groups()
        if first == "":  # suffix range: the last N bytes
            start, stop = max(0, len(data) - int(last)), len(data)
        else:
            start, stop = int(first), min(len(data), int(last) + 1 if last else len(data))
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{len(data)}"
        data, status = data[start:stop], 206
        hub.range_requests += 1
    handler._send(status, data, headers, head=method == "HEAD")


_API = rf"/api/{_REPO}"
_ROUTES = [
    (re.compile(r"/api/repos/create"), ("POST",), create_repo),
    (re.compile(r"/api/validate-yaml"), ("POST",), validate_yaml),
    (re.compile(r"/api/agent-harnesses"), ("GET",), agent_harnesses),
    (re.compile(rf"{_API}"), ("GET",), repo_info),
    (re.compile(rf"{_API}/revision/(?P<rev>[^/]+)"), ("GET",), repo_info),
    (re.compile(rf"{_API}/refs"), ("GET",), list_refs),
    (re.compile(rf"{_API}/branch/(?P<branch>[^/]+)"), ("POST",), create_branch),
    (re.compile(rf"{_API}/tag/(?P<rev>[^/]+)"), ("POST",), create_tag),
    (re.compile(rf"{_API}/preupload/(?P<rev>[^/]+)"), ("POST",), preupload),
    (re.compile(rf"{_API}/commit/(?P<rev>[^/]+)"), ("POST",), commit),
    (re.compile(rf"{_API}/commits/(?P<rev>[^/]+)"), ("GET",), list_commits),
    (re.compile(rf"{_API}/tree/(?P<rev>[^/]+)(?:/(?P<path>.*))?"), ("GET",), tree),
    (re.compile(rf"{_API}/paths-info/(?P<rev>[^/]+)"), ("POST",), paths_info),
    (re.compile(rf"/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<path>.+)"), ("GET", "HEAD"), resolve),
]


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    hub: LocalHub


class LocalHub:
    """In-memory Hub on 127.0.0.1 (a random free port unless `port` is given)."""

    def __init__(self, port: int = 0):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.unknown_requests: list[str] = []
        self.authorizations: set[str] = set()  # Authorization headers seen (tests check HF_TOKEN is sent)
        self.range_requests = 0  # partial downloads served (streaming reads Parquet by byte ranges)
        self.lock = threading.Lock()
        self.last_request = time.monotonic()
        self._server = _HubHTTPServer(("127.0.0.1", port), _Handler)
        self._server.hub = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LocalHub:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve an in-memory Hub-compatible API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one, printed at start)")
    parser.add_argument("--idle-timeout", type=float, default=600.0, help="stop after this many idle seconds")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    with LocalHub(args.port) as hub:
        print(hub.url, flush=True)
        while time.monotonic() - hub.last_request < args.idle_timeout:
            time.sleep(0.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
