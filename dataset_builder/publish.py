"""Publish one version of a built dataset directory to a Hub: one commit, one tag, then load it back.

`push_dataset` validates the directory, refuses a version tag that already exists (tags are never moved),
commits the card and shards in one commit whose message names the version and the row count (old shards
under `data/` are deleted in the same commit, so each version holds exactly its own rows), tags that
commit, and loads the tagged revision back with `datasets.load_dataset` to check rows and features.
`HF_ENDPOINT` and `HF_TOKEN` are honoured through `huggingface_hub`'s own configuration.
"""

from __future__ import annotations

import logging
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .card import CARD_REPO_PLACEHOLDER
from .features import FEATURES

logger = logging.getLogger(__name__)

VERSION_PATTERN = re.compile(r"^v\d+(\.\d+){1,2}$")


class PublishError(RuntimeError):
    """The version could not be published (bad input, existing tag, failed verification)."""


@dataclass(frozen=True)
class PushResult:
    repo_id: str
    version: str
    commit_sha: str
    revision: str  # where the commit landed: a branch or refs/pr/N
    rows: int
    pr_url: str | None = None
    verified: bool = False
    unchanged: bool = False  # the files equal the branch head: no new commit, the tag names the existing one

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_text(self) -> str:
        lines = [
            f"pushed {self.repo_id} {self.version}: {self.rows} rows",
            f"commit {self.commit_sha} on {self.revision}, tag {self.version}",
        ]
        if self.pr_url:
            lines.append(f"pull request: {self.pr_url} ({self.revision})")
        if self.unchanged:
            lines.append(
                "note: the files equal the branch head, so no new commit was made; the tag names that commit"
            )
        lines.append("verified: loaded the tagged revision back" if self.verified else "verified: skipped")
        return "\n".join(lines)


def _row_count(path: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in sorted((path / "data").glob("*.parquet")))


def _operations(api, root: Path, repo_id: str, revision: str) -> list:
    """Replace the card and every data shard of `revision` with those of `root` (one commit).

    The card's loading examples name the repository (the builder writes a placeholder); old shards that
    the new version does not overwrite are deleted, so each version holds exactly its own rows.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    card = (
        (root / "README.md").read_text(encoding="utf-8").replace(f'"{CARD_REPO_PLACEHOLDER}"', f'"{repo_id}"')
    )
    shards = sorted((root / "data").glob("*.parquet"))
    new_paths = {f"data/{shard.name}" for shard in shards}
    old_paths = [
        path
        for path in api.list_repo_files(repo_id, repo_type="dataset", revision=revision)
        if path.startswith("data/") and path not in new_paths
    ]
    return [
        *(CommitOperationDelete(path_in_repo=path) for path in old_paths),
        CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card.encode("utf-8")),
        *(
            CommitOperationAdd(path_in_repo=f"data/{shard.name}", path_or_fileobj=str(shard))
            for shard in shards
        ),
    ]


def verify_revision(repo_id: str, revision: str, expected_rows: int) -> None:
    """Load `revision` from the Hub into a fresh cache and check its rows and features."""
    import datasets

    with tempfile.TemporaryDirectory(prefix="drkernel-verify-") as cache_dir:
        loaded = datasets.load_dataset(repo_id, revision=revision, split="train", cache_dir=cache_dir)
        if loaded.num_rows != expected_rows:
            raise PublishError(
                f"{repo_id}@{revision}: loaded {loaded.num_rows} rows, expected {expected_rows}"
            )
        if loaded.features != FEATURES:
            raise PublishError(f"{repo_id}@{revision}: loaded features differ from dataset_builder.FEATURES")


def push_dataset(
    path: str | Path,
    *,
    repo_id: str,
    version: str,
    branch: str | None = None,
    create_pr: bool = False,
    private: bool = False,
    verify: bool = True,
) -> PushResult:
    """Publish the dataset directory at `path` as `version` of `repo_id`; see the module docstring."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    from .validate import validate_dataset

    root = Path(path)
    if not VERSION_PATTERN.match(version):
        raise PublishError(f"version {version!r} is not of the form vX.Y or vX.Y.Z")
    if "/" not in repo_id:
        raise PublishError(f"repo id {repo_id!r} must be ORG/NAME")
    report = validate_dataset(root)
    if not report.ok:
        raise PublishError(
            f"{root} does not validate; fix it before publishing:\n{report.to_text(max_problems=10)}"
        )
    rows = _row_count(root)

    api = HfApi()  # endpoint and token from HF_ENDPOINT / HF_TOKEN (or the stored login)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        existing = {
            ref.name: ref.target_commit for ref in api.list_repo_refs(repo_id, repo_type="dataset").tags
        }
        if version in existing:
            raise PublishError(
                f"tag {version} already exists on {repo_id} (commit {existing[version]}); tags are never overwritten, "
                "publish under a new version"
            )
        target = branch or "main"
        if branch:
            api.create_branch(repo_id, repo_type="dataset", branch=branch, exist_ok=True)
        head = api.dataset_info(repo_id, revision=target).sha
        info = api.create_commit(
            repo_id=repo_id,
            repo_type="dataset",
            operations=_operations(api, root, repo_id, target),
            revision=target,
            create_pr=create_pr,
            commit_message=f"Dataset {version}: {rows} rows",
            commit_description=f"Published with `python -m dataset_builder push` as version {version}.",
        )
        landed = info.pr_revision or target
        api.create_tag(
            repo_id,
            repo_type="dataset",
            tag=version,
            revision=info.oid,
            tag_message=f"Dataset {version}: {rows} rows",
        )
    except HfHubHTTPError as exc:
        raise PublishError(f"{repo_id}: the Hub refused the request: {exc}") from exc
    unchanged = info.oid == head and not info.pr_url  # huggingface_hub skips commits that change nothing
    if unchanged:
        logger.warning(
            "%s: %s has the same files as %s@%s; tagged that commit", repo_id, version, target, head
        )
    logger.info("pushed %s %s as commit %s", repo_id, version, info.oid)
    if verify:
        verify_revision(repo_id, version, rows)
    return PushResult(
        repo_id, version, info.oid, landed, rows, info.pr_url, verified=verify, unchanged=unchanged
    )
