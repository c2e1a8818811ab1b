"""Model evaluation through trl_ext's rollout: tiny local model, OpenAI-compatible endpoint, TTS, resume.

The evaluator is the counting fake (kernel verdicts are covered by test_run_saved.py); what is tested
here is generation -> environment -> records -> summary, the resume cache, and the endpoint protocol.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kernel_eval.config import EvalConfig
from kernel_eval.run import run_evaluation
from tests.support.eval_fakes import CountingEvaluator, block, reply_json, write_dataset


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from trl_ext.tiny_model import save_tiny_model

    return str(save_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


@pytest.fixture
def dataset(tmp_path):
    return str(write_dataset(tmp_path / "dataset", num_tasks=3))


def run(config, evaluator):
    return run_evaluation(config, evaluator_factory=lambda _config: evaluator)


def test_tiny_model_multi_turn_with_tts_and_resume(tmp_path, tiny_model, dataset):
    config = EvalConfig(
        dataset=dataset,
        out=str(tmp_path / "out"),
        model=tiny_model,
        num_samples=2,
        num_turns=2,
        max_new_tokens=8,
        limit=2,
        tts_rounds=1,
        tts_window=1,
    )
    evaluator = CountingEvaluator()
    summary = run(config, evaluator)
    # 2 tasks x 2 samples x 2 turns, then one TTS round per sample.
    assert (summary["num_tasks"], summary["num_samples"], summary["num_turns"]) == (2, 4, 2)
    assert len(evaluator.calls) == 4 * 2 + 4
    assert evaluator.shared_batches == 0  # an evaluation judges every sample on its own, identical or not
    assert {ref for ref, _ in evaluator.calls} == {"# reference 0", "# reference 1"}
    lines = [json.loads(x) for x in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and {x["turn"] for x in lines} == {1, 2}
    turn2 = next(x for x in lines if x["turn"] == 2)
    # The turn-2 prompt holds the task prompt, the turn-1 completion and the evaluator's feedback.
    assert [m["role"] for m in turn2["prompt"]] == ["user", "assistant", "user"]
    assert turn2["prompt"][2]["content"].startswith("You received the server's feedback")
    assert "fb: no code" in turn2["prompt"][2]["content"]
    tts = [json.loads(x) for x in (tmp_path / "out" / "tts_samples.jsonl").read_text().splitlines()]
    assert len(tts) == 4 * 3 and sum(x["phase"] == "tts" for x in tts) == 4
    assert summary["tts"]["num_rounds"] == 3
    # window 1: the TTS prompt is the task prompt plus the single best earlier turn and its feedback.
    tts_turn = next(x for x in tts if x["phase"] == "tts")
    assert [m["role"] for m in tts_turn["prompt"]] == ["user", "assistant", "user"]
    earlier = [
        x["completion"] for x in tts if x["uuid"] == tts_turn["uuid"] and x["sample"] == tts_turn["sample"]
    ]
    assert tts_turn["prompt"][1]["content"] in earlier[:2]
    # The generated text is what was evaluated.
    assert sorted(c for _, c in evaluator.calls[:8]) == sorted(x["completion"] for x in lines)

    again = CountingEvaluator()
    resumed = run(config, again)
    assert again.calls == [] and resumed["cached_turns"] == 8 and resumed["evaluated_turns"] == 0
    assert resumed["per_turn"] == summary["per_turn"]

    more = CountingEvaluator()
    run(EvalConfig(**{**config.to_dict(), "num_samples": 3, "tts_rounds": 0}), more)
    assert len(more.calls) == 2 * 2  # only the new sample of each task (2 turns) is generated


class _Completions(BaseHTTPRequestHandler):
    requests: list = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append((self.path, body))
        choices = [
            {"index": i, "text": block("HONEST" if i % 2 == 0 else "WRONG"), "finish_reason": "stop"}
            for i in range(len(body["prompt"]))
        ]
        reply_json(self, {"choices": list(reversed(choices))})

    def log_message(self, *args):
        pass


def test_openai_compatible_endpoint(tmp_path, tiny_model, dataset):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Completions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        config = EvalConfig(
            dataset=dataset,
            out=str(tmp_path / "out"),
            endpoint=f"http://127.0.0.1:{server.server_port}",
            model=tiny_model,
            num_samples=2,
            num_turns=1,
            max_new_tokens=64,
            temperature=0.5,
        )
        evaluator = CountingEvaluator()
        summary = run(config, evaluator)
    finally:
        server.shutdown()
        server.server_close()
    path, body = _Completions.requests[0]
    assert path == "/v1/completions" and body["max_tokens"] == 64 and body["temperature"] == 0.5
    assert all(isinstance(t, int) for t in body["prompt"][0])  # token-id prompts from the chat template
    # 3 tasks x 2 samples in one batch: choices came back in reverse order and were put back by index.
    assert summary["num_samples"] == 6 and summary["correct_rate"] == pytest.approx(3 / 6)
    assert summary["status_counts"] == {"correct": 3, "incorrect": 3}
