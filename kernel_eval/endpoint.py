"""Generation through an OpenAI-compatible completions server (e.g. ``vllm serve``), as a rollout backend.

Implements ``trl_ext.rollout.GenerationBackend``: prompts arrive as token ids (the rollout owns the chat
template), go to ``POST {base}/v1/completions`` as token-id prompts in one batched request, and the returned
text is tokenised back with the same tokenizer. An end-of-turn token is appended when the server says the
completion stopped (``finish_reason == "stop"``), so the rollout can tell finished turns from truncated ones.
No log-probs are returned (evaluation does not need them).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

from trl_ext.generation import GenerationOutput

logger = logging.getLogger(__name__)


def completions_url(base: str) -> str:
    """``http://host:8000`` or ``http://host:8000/v1`` -> ``http://host:8000/v1/completions``."""
    base = base.rstrip("/")
    if base.endswith("/completions"):
        return base
    return base + ("/completions" if base.endswith("/v1") else "/v1/completions")


class EndpointBackend:
    """Samples completions from an OpenAI-compatible server; see the module docstring."""

    def __init__(
        self, base_url: str, model: str, tokenizer: Any, sampling: dict[str, Any], timeout_s: float = 600.0
    ):
        self.url = completions_url(base_url)
        self.model = model
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.timeout_s = timeout_s

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url,
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")[:500]
            raise RuntimeError(f"endpoint {self.url} answered HTTP {exc.code}: {body}") from None
        except urllib.error.URLError as exc:
            raise RuntimeError(f"endpoint {self.url} unreachable: {exc.reason}") from None

    def generate(self, prompts: list[list[int]]) -> list[GenerationOutput]:
        if not prompts:
            return []
        payload = {
            "model": self.model,
            "prompt": [list(p) for p in prompts],
            "max_tokens": self.sampling["max_new_tokens"],
            "temperature": self.sampling["temperature"],
            "top_p": self.sampling["top_p"],
            "seed": self.sampling.get("seed"),
            "n": 1,
        }
        data = self._post(payload)
        choices = data.get("choices")
        if not isinstance(choices, list) or len(choices) != len(prompts):
            got = len(choices) if isinstance(choices, list) else "no"
            raise RuntimeError(f"endpoint {self.url} returned {got} choices for {len(prompts)} prompts")
        outputs: list[GenerationOutput | None] = [None] * len(prompts)
        eos = self.tokenizer.eos_token_id
        for position, choice in enumerate(choices):
            index = choice.get("index", position)
            if not isinstance(index, int) or not 0 <= index < len(prompts) or outputs[index] is not None:
                raise RuntimeError(f"endpoint {self.url} returned a bad or repeated choice index {index!r}")
            ids = self.tokenizer.encode(choice.get("text", ""), add_special_tokens=False)
            if choice.get("finish_reason") == "stop":
                ids.append(eos)
            outputs[index] = GenerationOutput(ids, None)
        return [o for o in outputs if o is not None]
