"""Versioned publishing against the local Hub server: two versions, tags, a branch, a PR, loads by tag /
branch / sha, a refused existing tag, and offline use through snapshot_download. Every Hub call runs in a
subprocess, because huggingface_hub and datasets read HF_ENDPOINT / HF_HUB_OFFLINE when they are imported."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataset_builder import build_dataset
from tests.support.db_rows import distinct_references, upstream_row, write_jsonl
from tests.support.hub_server import LocalHub

ROOT = Path(__file__).resolve().parents[2]

LOAD_BACK = textwrap.dedent(
    """
    import json, sys
    import datasets
    from huggingface_hub import HfApi, snapshot_download
    from dataset_builder import FEATURES

    repo = sys.argv[1]
    api = HfApi()
    refs = api.list_repo_refs(repo, repo_type="dataset", include_pull_requests=True)
    out = {"tags": {r.name: r.target_commit for r in refs.tags},
           "branches": {r.name: r.target_commit for r in refs.branches},
           "prs": [r.ref for r in refs.pull_requests], "loads": {}}
    revisions = list(out["tags"]) + list(out["branches"]) + list(out["tags"].values()) + out["prs"]
    for revision in revisions:
        ds = datasets.load_dataset(repo, revision=revision, split="train")
        assert ds.features == FEATURES, revision
        out["loads"][revision] = sorted(r["extra_info"]["uuid"] for r in ds)
    info = api.dataset_info(repo, revision="v1.0")
    out["v1_files"] = sorted(s.rfilename for s in info.siblings)
    out["v1_title"] = api.list_repo_commits(repo, repo_type="dataset", revision="v1.0")[0].title
    infos = api.get_paths_info(repo, ["README.md", "data", "missing.txt"], repo_type="dataset", revision="v1.0")
    out["paths_info"] = sorted((type(i).__name__, i.path) for i in infos)
    streamed = datasets.load_dataset(repo, revision="v1.1", split="train", streaming=True)
    out["streamed"] = sorted(r["extra_info"]["uuid"] for r in streamed)  # HfFileSystem range reads
    path = snapshot_download(repo, repo_type="dataset", revision="v1.0")
    out["snapshot"] = path
    out["card_names_repo"] = f'load_dataset("{repo}", revision=' in open(path + "/README.md").read()
    print(json.dumps(out))
    """
)

OFFLINE_LOAD = textwrap.dedent(
    """
    import json, sys
    import datasets
    ds = datasets.load_dataset(sys.argv[1], split="train")
    print(json.dumps(sorted(r["extra_info"]["uuid"] for r in ds)))
    """
)


@pytest.fixture
def hub(tmp_path):
    with LocalHub() as server:
        server.env = dict(
            os.environ,
            HF_ENDPOINT=server.url,
            HF_TOKEN="hf_local_test_token",
            HF_HUB_DISABLE_XET="1",
            HF_HUB_OFFLINE="0",
            HF_DATASETS_OFFLINE="0",
            HF_HOME=str(tmp_path / "hf-home"),
            HF_HUB_DISABLE_TELEMETRY="1",
        )
        yield server
        assert not server.unknown_requests, (
            server.unknown_requests
        )  # every call the clients made is implemented


def _run(env, *args, script=None):
    argv = (
        [sys.executable, "-c", script, *args] if script else [sys.executable, "-m", "dataset_builder", *args]
    )
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _dataset(tmp_path, name, refs, start, shard_size=2**28):
    source = write_jsonl(
        [upstream_row(start + i, ref) for i, ref in enumerate(refs)], tmp_path / f"{name}.jsonl"
    )
    out = tmp_path / name
    build_dataset(str(source), "drkernel", out, shard_size=shard_size)
    return out


def test_push_two_versions_and_load_each_back(tmp_path, hub):
    refs = distinct_references(5)
    v1 = _dataset(tmp_path, "v1", refs[:3], 0)
    v2 = _dataset(tmp_path, "v2", refs[1:], 10, shard_size=2000)  # 2+ shards; later versions must delete them
    assert len(list((v2 / "data").glob("*.parquet"))) > 1

    first = _run(hub.env, "push", str(v1), "--repo-id", "org/kernels", "--version", "v1.0")
    assert first.returncode == 0, first.stderr
    assert "pushed org/kernels v1.0: 3 rows" in first.stdout and "verified: loaded" in first.stdout
    assert hub.authorizations == {"Bearer hf_local_test_token"}  # HF_TOKEN reached the Hub
    second = _run(
        hub.env, "push", str(v2), "--repo-id", "org/kernels", "--version", "v1.1", "--branch", "next"
    )
    assert second.returncode == 0, second.stderr
    v3 = _dataset(tmp_path, "v3", refs[4:], 20)
    pr = _run(hub.env, "push", str(v3), "--repo-id", "org/kernels", "--version", "v1.2", "--create-pr")
    assert pr.returncode == 0, pr.stderr
    assert "pull request:" in pr.stdout and "refs/pr/1" in pr.stdout

    again = _run(hub.env, "push", str(v2), "--repo-id", "org/kernels", "--version", "v1.0", "--no-verify")
    assert again.returncode == 1
    assert "tag v1.0 already exists on org/kernels" in again.stderr

    same = _run(hub.env, "push", str(v1), "--repo-id", "org/kernels", "--version", "v1.3", "--no-verify")
    assert same.returncode == 0 and "no new commit" in same.stdout  # said, not hidden

    loaded = _run(hub.env, "org/kernels", script=LOAD_BACK)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    result = json.loads(loaded.stdout.strip().splitlines()[-1])
    v1_ids = [f"cuda_llm_{i}" for i in range(3)]
    v2_ids = sorted(f"cuda_llm_{10 + i}" for i in range(4))
    assert sorted(result["tags"]) == ["v1.0", "v1.1", "v1.2", "v1.3"]
    assert result["loads"]["v1.0"] == v1_ids
    assert result["loads"]["v1.1"] == v2_ids
    assert result["loads"]["next"] == v2_ids
    assert result["loads"]["main"] == v1_ids  # the branch and the PR did not touch main
    assert result["tags"]["v1.3"] == result["tags"]["v1.0"]
    assert result["loads"][result["tags"]["v1.0"]] == v1_ids  # by commit sha
    assert result["loads"][result["tags"]["v1.1"]] == v2_ids
    assert result["loads"]["refs/pr/1"] == result["loads"]["v1.2"] == ["cuda_llm_20"]
    assert result["branches"]["next"] == result["tags"]["v1.1"]
    assert "README.md" in result["v1_files"] and any(f.startswith("data/train-") for f in result["v1_files"])
    assert result["v1_title"] == "Dataset v1.0: 3 rows"
    assert result["card_names_repo"]
    assert result["paths_info"] == [["RepoFile", "README.md"], ["RepoFolder", "data"]]
    assert result["streamed"] == v2_ids
    assert hub.range_requests > 0

    # Offline: the snapshot folder loads without any Hub access.
    offline_env = dict(hub.env, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")
    offline = _run(offline_env, result["snapshot"], script=OFFLINE_LOAD)
    assert offline.returncode == 0, offline.stderr[-2000:]
    assert json.loads(offline.stdout.strip().splitlines()[-1]) == v1_ids


def test_push_refuses_bad_input(tmp_path, hub):
    v1 = _dataset(tmp_path, "v1", distinct_references(1), 0)
    bad_version = _run(hub.env, "push", str(v1), "--repo-id", "org/k", "--version", "1.0")
    assert bad_version.returncode == 1 and "not of the form vX.Y" in bad_version.stderr
    (v1 / "README.md").unlink()
    invalid = _run(hub.env, "push", str(v1), "--repo-id", "org/k", "--version", "v1.0")
    assert invalid.returncode == 1 and "does not validate" in invalid.stderr
