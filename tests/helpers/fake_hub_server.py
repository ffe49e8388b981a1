"""An in-memory, Hugging Face Hub-compatible HTTP server for tests (standard library only).

It implements the subset of the Hub HTTP API that ``huggingface_hub`` 2.x uses to authenticate, create a
repo, upload a folder (regular files inline in the commit, large/binary files through the basic Git LFS
transfer), list files and download them. Xet storage is not implemented: run the client with
``HF_HUB_DISABLE_XET=1`` (or ``huggingface_hub.constants.HF_HUB_DISABLE_XET = True``).

Two servers are started on 127.0.0.1: the Hub itself (``FakeHub.endpoint``) and a "CDN" on another port
(``FakeHub.cdn_endpoint``) that receives LFS uploads and serves LFS downloads, like S3/CloudFront do for the real
Hub. Because the CDN is a different origin, the client stops at the ``302`` of ``HEAD /resolve`` and reads the
file metadata from that response, exactly as it does with huggingface.co.

Simplifications: repo ids must be ``namespace/name``; a new repo has one empty commit (no ``.gitattributes``);
any ``Bearer`` token is accepted and identifies ``FakeHub.user``; ``.gitignore`` rules and pagination are ignored;
a commit may target a branch (``main`` or ``refs/pr/N``), not a commit id.
"""

import base64
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn, cast
from urllib.parse import parse_qs, unquote, urlsplit

#: Files with these suffixes are stored with LFS, like the patterns of the Hub's default ``.gitattributes``.
LFS_SUFFIXES = frozenset(
    {".zip", ".mp4", ".bin", ".pkl", ".pt", ".pth", ".safetensors", ".npy", ".npz", ".h5", ".onnx", ".gz", ".tar"}
)
#: Files of this size or more are stored with LFS (the Hub refuses larger regular files).
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024

_API_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
_URL_PREFIXES = {"model": "", "dataset": "datasets/", "space": "spaces/"}


def _now() -> str:
    """Current UTC time in the Hub's format, e.g. ``2024-05-01T12:00:00.000Z``."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def git_blob_oid(data: bytes) -> str:
    """Git's object id of a blob (``git hash-object``), which the Hub uses as the ETag of regular files."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    """The Git LFS pointer file committed in place of an LFS file."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class Blob:
    """A file's content as committed, regular or LFS."""

    data: bytes
    lfs: bool
    sha256: str
    oid: str  # git blob id: of the content for regular files, of the pointer file for LFS files

    @classmethod
    def make(cls, data: bytes, lfs: bool) -> "Blob":
        """Build a blob and its hashes."""
        sha256 = hashlib.sha256(data).hexdigest()
        oid = git_blob_oid(lfs_pointer(sha256, len(data)) if lfs else data)
        return cls(data=data, lfs=lfs, sha256=sha256, oid=oid)


@dataclass(frozen=True)
class Commit:
    """A snapshot of a repo: its files, its parent and its message."""

    oid: str
    parent: str | None
    title: str
    date: str
    files: Mapping[str, Blob]


@dataclass
class Repo:
    """A repo: its commits by id, and its branches (``main``, ``refs/pr/N``) pointing to commits."""

    repo_type: str
    repo_id: str
    private: bool
    created_at: str
    commits: dict[str, Commit]
    branches: dict[str, str]

    def commit_for(self, revision: str) -> Commit | None:
        """The commit a branch name or a full commit id points to, if any."""
        oid = self.branches.get(revision, revision)
        return self.commits.get(oid)


class HubError(Exception):
    """An error answered as the Hub does: a status, a JSON ``{"error": ...}`` body and ``X-Error-*`` headers."""

    def __init__(
        self, status: int, message: str, error_code: str | None = None, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})
        if error_code is not None:
            self.headers["X-Error-Code"] = error_code


class _Server(ThreadingHTTPServer):
    """A threading HTTP server that knows its ``FakeHub``."""

    daemon_threads = True

    def __init__(self, hub: "FakeHub") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hub = hub


class _Handler(BaseHTTPRequestHandler):
    """Parses a request, dispatches it through ``_ROUTES`` and answers in JSON (or raw bytes for files)."""

    server: _Server
    body: bytes
    query: dict[str, list[str]]

    # ------------------------------------------------------------------ plumbing

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet: requests are recorded in ``FakeHub.requests`` instead."""

    @property
    def hub(self) -> "FakeHub":
        return self.server.hub

    def _dispatch(self) -> None:
        """Find the route matching the method and (still URL-encoded) path, call it with the decoded groups."""
        url = urlsplit(self.path)
        self.query = parse_qs(url.query)
        self.body = self._read_body()
        self.hub.requests.append(f"{self.command} {url.path}")
        try:
            for methods, pattern, handler in _ROUTES:
                match = pattern.fullmatch(url.path)
                if match is not None and self.command in methods:
                    handler(self, **self._route_args(match.groupdict()))
                    return
            raise HubError(404, f"FakeHub: no route for {self.command} {url.path} (is HF_HUB_DISABLE_XET set?)")
        except HubError as error:
            headers = {"X-Error-Message": error.message, **error.headers}
            self._send_json({"error": error.message}, status=error.status, headers=headers)
        except Exception as error:  # a bug in the fake: answer 500 (the client retries it a few times)
            self._send_json({"error": f"FakeHub internal error: {error!r}"}, status=500)
            raise

    @staticmethod
    def _route_args(groups: dict[str, str | None]) -> dict[str, str | None]:
        """URL-decode the route groups and turn the repo type segment into ``repo_type``."""
        args = {name: (unquote(value) if value is not None else None) for name, value in groups.items()}
        if "api_type" in args:
            args["repo_type"] = _API_TYPES[cast(str, args.pop("api_type"))]
        if "url_type" in args:
            url_type = args.pop("url_type")
            args["repo_type"] = _API_TYPES[url_type] if url_type else "model"
        return args

    def _read_body(self) -> bytes:
        """The whole request body, sent with a ``Content-Length`` or chunked."""
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()  # CRLF after each chunk
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # optional trailers
            pass
        return b"".join(chunks)

    def _send(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Send a response; ``HEAD`` gets the same headers (``Content-Length`` included) and no body."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _send_json(self, payload: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers=headers)

    def _json_body(self) -> Any:
        try:
            return json.loads(self.body or b"{}")
        except json.JSONDecodeError as error:
            raise HubError(400, f"Invalid JSON body: {error}") from error

    def _flag(self, name: str) -> bool:
        """A boolean query parameter (``true``/``1``)."""
        return self.query.get(name, [""])[0].lower() in ("1", "true")

    def _require_auth(self) -> None:
        if not self.headers.get("Authorization", "").startswith("Bearer "):
            raise HubError(401, "Invalid username or password.")

    def _repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self.hub.repos.get((repo_type, repo_id))
        if repo is None:
            raise HubError(404, "Repository not found", "RepoNotFound")
        return repo

    def _commit(self, repo: Repo, revision: str) -> Commit:
        commit = repo.commit_for(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    def _entry_not_found(self, commit: Commit, path: str) -> NoReturn:
        raise HubError(404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": commit.oid})

    # ------------------------------------------------------------------ account and repos

    def whoami(self) -> None:
        """``GET /api/whoami-v2``."""
        self._require_auth()
        user = self.hub.user
        self._send_json(
            {
                "type": "user",
                "id": hashlib.sha1(user.encode()).hexdigest()[:24],
                "name": user,
                "fullname": user,
                "email": f"{user}@example.com",
                "emailVerified": True,
                "isPro": False,
                "canPay": False,
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "fake", "role": "write"}},
            }
        )

    def validate_yaml(self) -> None:
        """``POST /api/validate-yaml``: every model card is valid."""
        self._send_json({"errors": [], "warnings": []})

    def create_repo(self) -> None:
        """``POST /api/repos/create``: 409 (with the url, as the Hub does) if the repo exists."""
        self._require_auth()
        payload = self._json_body()
        repo_type = payload.get("type") or "model"
        if repo_type not in _URL_PREFIXES:
            raise HubError(400, f"Unsupported repo type: {repo_type}")
        repo_id = f"{payload.get('organization') or self.hub.user}/{payload['name']}"
        url = f"{self.hub.endpoint}/{_URL_PREFIXES[repo_type]}{repo_id}"
        with self.hub.lock:
            exists = (repo_type, repo_id) in self.hub.repos
            if not exists:
                self.hub.create_repo(repo_id, repo_type, private=payload.get("visibility") == "private")
        if exists:  # the client reads "url" from this 409 too when `exist_ok=True`
            error = f"You already created this {repo_type} repo"
            self._send_json({"error": error, "url": url}, status=409, headers={"X-Error-Message": error})
        else:
            self._send_json({"url": url, "name": repo_id, "id": repo_id})

    def delete_repo(self) -> None:
        """``DELETE /api/repos/delete``."""
        self._require_auth()
        payload = self._json_body()
        repo_id = f"{payload.get('organization') or self.hub.user}/{payload['name']}"
        with self.hub.lock:
            if self.hub.repos.pop((payload.get("type") or "model", repo_id), None) is None:
                raise HubError(404, "Repository not found", "RepoNotFound")
        self._send_json({})

    def repo_info(self, repo_type: str, repo_id: str, revision: str | None) -> None:
        """``GET /api/models/{repo}`` and ``GET /api/models/{repo}/revision/{rev}`` (``model_info``/``repo_info``)."""
        repo = self._repo(repo_type, repo_id)
        commit = self._commit(repo, revision or "main")
        siblings: list[dict[str, Any]] = []
        for path, blob in sorted(commit.files.items()):
            sibling: dict[str, Any] = {"rfilename": path}
            if self._flag("blobs"):
                sibling.update(size=len(blob.data), blobId=blob.oid)
                if blob.lfs:
                    sibling["lfs"] = {
                        "size": len(blob.data),
                        "sha256": blob.sha256,
                        "pointerSize": len(lfs_pointer(blob.sha256, len(blob.data))),
                    }
            siblings.append(sibling)
        self._send_json(
            {
                "id": repo_id,
                "author": repo_id.split("/")[0],
                "sha": commit.oid,
                "private": repo.private,
                "disabled": False,
                "gated": False,
                "createdAt": repo.created_at,
                "lastModified": commit.date,
                "tags": [],
                "downloads": 0,
                "likes": 0,
                "siblings": siblings,
            }
        )

    # ------------------------------------------------------------------ uploads

    def preupload(self, repo_type: str, repo_id: str, revision: str) -> None:
        """``POST /api/{type}s/{repo}/preupload/{rev}``: tell the client which files go through LFS."""
        self._require_auth()
        repo = self._repo(repo_type, repo_id)
        commit = self._commit(repo, revision)
        answers = []
        for file in self._json_body().get("files", []):
            sample = base64.b64decode(file.get("sample", ""))
            is_lfs = (
                any(file["path"].lower().endswith(suffix) for suffix in LFS_SUFFIXES)
                or file["size"] >= LFS_SIZE_THRESHOLD
                or b"\0" in sample  # binary content
            )
            existing = commit.files.get(file["path"])
            oid = None if existing is None else (existing.sha256 if existing.lfs else existing.oid)
            answers.append(
                {"path": file["path"], "uploadMode": "lfs" if is_lfs else "regular", "shouldIgnore": False, "oid": oid}
            )
        self._send_json({"files": answers, "commitOid": commit.oid})

    def lfs_batch(self, repo_type: str, repo_id: str) -> None:
        """``POST /{repo}.git/info/lfs/objects/batch``: upload (and verify) actions for the objects not stored yet."""
        self._require_auth()
        self._repo(repo_type, repo_id)
        payload = self._json_body()
        if payload.get("operation") != "upload":
            raise HubError(422, "FakeHub only implements LFS uploads")
        if "basic" not in payload.get("transfers", ["basic"]):
            raise HubError(422, "FakeHub only implements the 'basic' LFS transfer (set HF_HUB_DISABLE_XET=1)")
        prefix = _URL_PREFIXES[repo_type]
        objects = []
        for obj in payload.get("objects", []):
            answer: dict[str, Any] = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.hub.lfs_objects:
                answer["actions"] = {
                    "upload": {"href": f"{self.hub.cdn_endpoint}/fake-lfs/{obj['oid']}", "header": {}},
                    "verify": {"href": f"{self.hub.endpoint}/{prefix}{repo_id}.git/info/lfs/objects/verify"},
                }
            objects.append(answer)
        self._send(
            200,
            json.dumps({"transfer": "basic", "objects": objects}).encode(),
            content_type="application/vnd.git-lfs+json",
        )

    def lfs_upload(self, oid: str) -> None:
        """``PUT /fake-lfs/{sha256}`` on the CDN: store an LFS object after checking its hash."""
        if hashlib.sha256(self.body).hexdigest() != oid:
            raise HubError(400, "Uploaded content does not match its sha256")
        with self.hub.lock:
            self.hub.lfs_objects[oid] = self.body
        self._send(200)

    def lfs_verify(self, repo_type: str, repo_id: str) -> None:
        """``POST /{repo}.git/info/lfs/objects/verify``: 404 unless the object was uploaded with that size."""
        self._require_auth()
        self._repo(repo_type, repo_id)
        payload = self._json_body()
        data = self.hub.lfs_objects.get(payload.get("oid", ""))
        if data is None or len(data) != payload.get("size"):
            raise HubError(404, f"LFS object {payload.get('oid')} not found")
        self._send_json({})

    def commit(self, repo_type: str, repo_id: str, revision: str) -> None:
        """``POST /api/{type}s/{repo}/commit/{rev}``: apply an NDJSON commit (header, file, lfsFile, deleted*)."""
        self._require_auth()
        lines = [json.loads(line) for line in self.body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "The first NDJSON line must be the commit header")
        header = lines[0]["value"]
        with self.hub.lock:
            repo = self._repo(repo_type, repo_id)
            create_pr = self._flag("create_pr")
            base = self._commit(repo, revision)
            if revision not in repo.branches:
                raise HubError(400, f"Can only commit to a branch, not to {revision}")
            if header.get("parentCommit") not in (None, base.oid):
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
            files = dict(base.files)
            for line in lines[1:]:
                self._apply_operation(files, base, line["key"], line["value"])
            new_commit = self.hub.add_commit(repo, base, header.get("summary", ""), files)
            pr_url = None
            if create_pr:
                number = 1 + sum(branch.startswith("refs/pr/") for branch in repo.branches)
                repo.branches[f"refs/pr/{number}"] = new_commit.oid
                pr_url = f"{self.hub.endpoint}/{_URL_PREFIXES[repo_type]}{repo_id}/discussions/{number}"
            else:
                repo.branches[revision] = new_commit.oid
        self._send_json(
            {
                "success": True,
                "commitOid": new_commit.oid,
                "commitUrl": f"{self.hub.endpoint}/{_URL_PREFIXES[repo_type]}{repo_id}/commit/{new_commit.oid}",
                "pullRequestUrl": pr_url,
            }
        )

    def _apply_operation(self, files: dict[str, Blob], base: Commit, key: str, value: dict[str, Any]) -> None:
        """Apply one commit operation to ``files``."""
        path = value["path"]
        if key == "file":
            if value.get("encoding", "base64") != "base64":
                raise HubError(400, f"Unsupported encoding for {path}")
            files[path] = Blob.make(base64.b64decode(value["content"]), lfs=False)
        elif key == "lfsFile":
            data = self.hub.lfs_objects.get(value["oid"])
            if data is None:
                raise HubError(400, f"LFS object {value['oid']} ({path}) was not uploaded")
            files[path] = Blob.make(data, lfs=True)
        elif key == "deletedFile":
            if files.pop(path, None) is None:
                self._entry_not_found(base, f"{path}: A file with this name doesn't exist")
        elif key == "deletedFolder":
            folder = path.rstrip("/") + "/"
            for name in [name for name in files if name.startswith(folder)]:
                del files[name]
        else:
            raise HubError(400, f"Unsupported commit operation: {key}")

    # ------------------------------------------------------------------ listing

    def tree(self, repo_type: str, repo_id: str, revision: str, path: str | None) -> None:
        """``GET /api/{type}s/{repo}/tree/{rev}[/{path}]?recursive=&expand=`` (one page, no ``Link`` header)."""
        repo = self._repo(repo_type, repo_id)
        commit = self._commit(repo, revision)
        base = (path or "").strip("/")
        prefix = f"{base}/" if base else ""
        folders: set[str] = set()
        files: list[str] = []
        for name in commit.files:
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix) :].split("/")
            if self._flag("recursive"):
                folders.update(prefix + "/".join(parts[:i]) for i in range(1, len(parts)))
                files.append(name)
            elif len(parts) == 1:
                files.append(name)
            else:
                folders.add(prefix + parts[0])
        if base and not files and not folders:
            self._entry_not_found(commit, base)
        expand = self._flag("expand")
        entries = [self._path_info(repo, commit, name, expand) for name in sorted(folders | set(files))]
        self._send_json(entries)

    def paths_info(self, repo_type: str, repo_id: str, revision: str) -> None:
        """``POST /api/{type}s/{repo}/paths-info/{rev}`` (form body ``paths=...&expand=...``); unknown paths are skipped."""
        repo = self._repo(repo_type, repo_id)
        commit = self._commit(repo, revision)
        form = parse_qs(self.body.decode())
        expand = form.get("expand", [""])[0].lower() in ("1", "true")
        entries = []
        for path in form.get("paths", []):
            path = path.strip("/")
            if path in commit.files or any(name.startswith(f"{path}/") for name in commit.files):
                entries.append(self._path_info(repo, commit, path, expand))
        self._send_json(entries)

    def _path_info(self, repo: Repo, commit: Commit, path: str, expand: bool) -> dict[str, Any]:
        """A tree entry as the Hub returns it: a file (with ``lfs`` info) or a directory."""
        blob = commit.files.get(path)
        if blob is None:
            snapshot = _snapshot(commit, path)
            info: dict[str, Any] = {"type": "directory", "oid": hashlib.sha1(repr(snapshot).encode()).hexdigest()}
        else:
            info = {"type": "file", "oid": blob.oid, "size": len(blob.data)}
            if blob.lfs:
                pointer_size = len(lfs_pointer(blob.sha256, len(blob.data)))
                info["lfs"] = {"oid": blob.sha256, "size": len(blob.data), "pointerSize": pointer_size}
        info["path"] = path
        if expand:
            last = _last_commit_touching(repo, commit, path)
            info["lastCommit"] = {"id": last.oid, "title": last.title, "date": last.date}
        return info

    # ------------------------------------------------------------------ downloads

    def resolve(self, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        """``GET|HEAD /{repo}/resolve/{rev}/{path}``: regular files inline, LFS files as a 302 to the CDN."""
        repo = self._repo(repo_type, repo_id)
        commit = self._commit(repo, revision)
        blob = commit.files.get(path)
        if blob is None:
            self._entry_not_found(commit, path)
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{blob.oid}"', "Accept-Ranges": "bytes"}
        if blob.lfs:
            headers.update(
                {
                    "X-Linked-Etag": f'"{blob.sha256}"',
                    "X-Linked-Size": str(len(blob.data)),
                    "Location": f"{self.hub.cdn_endpoint}/fake-lfs/{blob.sha256}",
                }
            )
            self._send(302, headers=headers)
        else:
            self._send(200, blob.data, content_type="application/octet-stream", headers=headers)

    def lfs_download(self, oid: str) -> None:
        """``GET|HEAD /fake-lfs/{sha256}`` on the CDN (no authentication, like a signed URL)."""
        data = self.hub.lfs_objects.get(oid)
        if data is None:
            raise HubError(404, "Not found")
        self._send(200, data, content_type="application/octet-stream", headers={"ETag": f'"{oid}"'})


def _snapshot(commit: Commit, path: str) -> tuple[tuple[str, str], ...]:
    """The (path, blob id) pairs of a file or of everything under a folder, to compare versions."""
    return tuple(
        sorted((name, blob.oid) for name, blob in commit.files.items() if name == path or name.startswith(f"{path}/"))
    )


def _last_commit_touching(repo: Repo, commit: Commit, path: str) -> Commit:
    """The oldest ancestor of ``commit`` (walking back while nothing changes) with the same content at ``path``."""
    snapshot = _snapshot(commit, path)
    while commit.parent is not None and _snapshot(repo.commits[commit.parent], path) == snapshot:
        commit = repo.commits[commit.parent]
    return commit


_REPO_ID = r"(?P<repo_id>[\w.-]+/[\w.-]+)"
_API = r"/api/(?P<api_type>models|datasets|spaces)/" + _REPO_ID
_URL = r"/(?:(?P<url_type>datasets|spaces)/)?" + _REPO_ID
_GIT = r"/(?:(?P<url_type>datasets|spaces)/)?(?P<repo_id>[\w.-]+/[\w.-]+?)\.git/info/lfs/objects"
_REV = r"(?P<revision>[^/]+)"
_OID = r"(?P<oid>[0-9a-f]{64})"
_GET = frozenset({"GET", "HEAD"})

#: The dispatch table: (methods, pattern on the URL-encoded path, handler).
_ROUTES: tuple[tuple[frozenset[str], re.Pattern[str], Callable[..., None]], ...] = tuple(
    (methods, re.compile(pattern), handler)
    for methods, pattern, handler in [
        (_GET, r"/api/whoami-v2", _Handler.whoami),
        ({"POST"}, r"/api/validate-yaml", _Handler.validate_yaml),
        ({"POST"}, r"/api/repos/create", _Handler.create_repo),
        ({"DELETE"}, r"/api/repos/delete", _Handler.delete_repo),
        (_GET, rf"{_API}(?:/revision/{_REV})?", _Handler.repo_info),
        ({"POST"}, rf"{_API}/preupload/{_REV}", _Handler.preupload),
        ({"POST"}, rf"{_API}/commit/{_REV}", _Handler.commit),
        (_GET, rf"{_API}/tree/{_REV}(?:/(?P<path>.*))?", _Handler.tree),
        ({"POST"}, rf"{_API}/paths-info/{_REV}", _Handler.paths_info),
        ({"POST"}, rf"{_GIT}/batch", _Handler.lfs_batch),
        ({"POST"}, rf"{_GIT}/verify", _Handler.lfs_verify),
        ({"PUT"}, rf"/fake-lfs/{_OID}", _Handler.lfs_upload),
        (_GET, rf"/fake-lfs/{_OID}", _Handler.lfs_download),
        (_GET, rf"{_URL}/resolve/{_REV}/(?P<path>.+)", _Handler.resolve),
    ]
)


class FakeHub:
    """Context manager: starts the server on 127.0.0.1 (free port), yields itself; .endpoint is 'http://127.0.0.1:PORT'.

    Attributes:
        endpoint: base URL of the Hub API, to give to ``HfApi(endpoint=...)`` / ``hf_hub_download(endpoint=...)``.
        cdn_endpoint: base URL of the "CDN" that stores LFS objects (a different origin than ``endpoint``).
        user: the name ``whoami`` returns and the namespace of repos created without one.
        requests: ``"METHOD /path"`` of every request received, in order.
        repos: ``(repo_type, repo_id) -> Repo``; ``lfs_objects``: ``sha256 -> bytes``.
    """

    def __init__(self, user: str = "fake-user") -> None:
        self.user = user
        self.endpoint = ""
        self.cdn_endpoint = ""
        self.requests: list[str] = []
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self.lock = threading.RLock()
        self._servers: list[_Server] = []
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> "FakeHub":
        for _ in range(2):  # the Hub, then the CDN
            server = _Server(self)
            # A short poll interval makes shutdown() quick.
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="FakeHub", daemon=True)
            thread.start()
            self._servers.append(server)
            self._threads.append(thread)
        self.endpoint, self.cdn_endpoint = (f"http://127.0.0.1:{server.server_address[1]}" for server in self._servers)
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        self._servers.clear()
        self._threads.clear()

    def client_environment(self, hf_home: str) -> dict[str, str]:
        """Environment variables that point huggingface_hub (and the Zoo's Hub commands) at this server."""
        return {
            "HF_ENDPOINT": self.endpoint,
            "HF_TOKEN": "hf_dummy_token",
            "HF_HUB_DISABLE_XET": "1",
            "HF_HOME": hf_home,
            "SDL_VIDEODRIVER": "dummy",
            # huggingface_sb3 refuses to download pickled models unless the user says they trust them
            "TRUST_REMOTE_CODE": "True",
        }

    def create_repo(self, repo_id: str, repo_type: str = "model", private: bool = False) -> Repo:
        """Create an empty repo (one empty commit on ``main``); the server does this on ``POST /api/repos/create``."""
        with self.lock:
            repo = Repo(repo_type, repo_id, private, created_at=_now(), commits={}, branches={})
            repo.branches["main"] = self.add_commit(repo, None, "initial commit", {}).oid
            self.repos[(repo_type, repo_id)] = repo
            return repo

    def add_commit(self, repo: Repo, parent: Commit | None, title: str, files: Mapping[str, Blob]) -> Commit:
        """Record a new commit in ``repo`` (without moving any branch) and return it."""
        seed = f"{repo.repo_id}\n{parent.oid if parent else ''}\n{title}\n{time.time_ns()}\n{sorted(files)}"
        commit = Commit(hashlib.sha1(seed.encode()).hexdigest(), parent.oid if parent else None, title, _now(), files)
        repo.commits[commit.oid] = commit
        return commit

    def files(self, repo_id: str, repo_type: str = "model", revision: str = "main") -> dict[str, bytes]:
        """Current content of a repo, for assertions: ``{path: bytes}``."""
        commit = self.repos[(repo_type, repo_id)].commit_for(revision)
        if commit is None:
            raise KeyError(revision)
        return {path: blob.data for path, blob in commit.files.items()}

    def lfs_files(self, repo_id: str, repo_type: str = "model", revision: str = "main") -> set[str]:
        """The paths of a repo stored with LFS (uploaded through the LFS batch API)."""
        commit = self.repos[(repo_type, repo_id)].commit_for(revision)
        if commit is None:
            raise KeyError(revision)
        return {path for path, blob in commit.files.items() if blob.lfs}
