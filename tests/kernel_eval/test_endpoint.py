"""A model run end to end with the real parts: an OpenAI-compatible HTTP server on 127.0.0.1 plays a model that
answers wrong code at first and honest code once the prompt carries the evaluator's feedback; generation goes
through trl_ext's rollout, scoring through kernel_reward's KernelEnvironment and Evaluator (CPU interpreter).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kernel_eval.config import EvalConfig
from kernel_eval.run import run_evaluation
from tests.support.eval_fakes import reply_json, write_shipped_dataset
from tests.support.eval_programs import HONEST, WRONG


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from trl_ext.tiny_model import save_tiny_model

    return str(save_tiny_model(tmp_path_factory.mktemp("tiny") / "model"))


def test_feedback_loop_with_real_evaluator(tmp_path, tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    seen_feedback = []

    class Model(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            choices = []
            for index, ids in enumerate(body["prompt"]):
                prompt = tokenizer.decode(ids)
                fixed = "Server feedback (status/metrics/errors):" in prompt
                seen_feedback.append(fixed and '"status": "incorrect"' in prompt)
                choices.append({"index": index, "text": HONEST if fixed else WRONG, "finish_reason": "stop"})
            reply_json(self, {"choices": choices})

        def log_message(self, *args):
            pass

    dataset = write_shipped_dataset(tmp_path / "dataset", ["activation_silu"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = EvalConfig(
            dataset=str(dataset),
            out=str(tmp_path / "out"),
            model=tiny_model,
            num_samples=2,
            num_turns=2,
            endpoint=f"http://127.0.0.1:{server.server_port}",
            device="cpu",
            timeout=120,
        )
        summary = run_evaluation(config)
    finally:
        server.shutdown()
        server.server_close()
    # Turn 2 prompts carried the real verdict of turn 1 ("incorrect"), and the fix is judged correct.
    assert seen_feedback == [False, False, True, True]
    t1, t2 = summary["per_turn"]
    assert (t1["compile_rate"], t1["correct_rate"]) == (1.0, 0.0)
    assert (t2["correct_rate"], t2["hacked_rate"]) == (1.0, 0.0)
    assert summary["best_of_history"]["best_turn_histogram"] == {"2": 2}
