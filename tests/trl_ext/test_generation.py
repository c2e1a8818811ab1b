"""trl_ext.generation: log-probs recorded as generation goes (no per-step vocabulary scores kept) and micro-batches
sized by a memory bound."""

import contextlib

import pytest
import torch

pytest.importorskip("transformers")

from trl_ext.generation import (  # noqa: E402
    TransformersBackend,
    kv_cache_bytes_per_token,
    micro_batch_size,
    sampling_warpers,
)
from trl_ext.tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = save_tiny_model(tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def scores_logprobs(model, prompt, config):
    """The plain way, as the yardstick: generate with output_scores and read each sampled token's log-prob."""
    out = model.generate(
        input_ids=torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        generation_config=config,
        output_scores=True,
        return_dict_in_generate=True,
    )
    tokens = out.sequences[0, len(prompt) :]
    scores = torch.stack(out.scores, dim=1)[0].float()
    return tokens.tolist(), torch.log_softmax(scores, -1).gather(-1, tokens[:, None])[:, 0]


@pytest.mark.parametrize(
    "sampling",
    [
        dict(temperature=0.7, top_k=0, top_p=1.0),
        dict(temperature=1.3, top_k=20, top_p=0.9),
        dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.05),
    ],
)
def test_recorded_logprobs_equal_the_processed_scores_of_generate(tiny, sampling):
    from transformers import GenerationConfig

    model, tok = tiny
    config = GenerationConfig(
        max_new_tokens=12, do_sample=True, pad_token_id=tok.pad_token_id, eos_token_id=[], **sampling
    )
    backend = TransformersBackend(lambda: contextlib.nullcontext(model), config, tok.pad_token_id, [10**9])
    prompt = [1, 50, 60, 70]
    torch.manual_seed(3)
    (out,) = backend.generate([prompt])
    torch.manual_seed(3)  # same seed, same draws: the yardstick samples the same tokens
    tokens, expected = scores_logprobs(model, prompt, config)
    assert out.token_ids == tokens and len(out.logprobs) == 12
    assert torch.allclose(torch.tensor(out.logprobs), expected, atol=1e-5)
    assert not backend.generation_config.output_scores


def test_unreproducible_sampling_options_are_refused_by_name():
    from transformers import GenerationConfig

    with pytest.raises(ValueError, match="typical_p"):
        sampling_warpers(GenerationConfig(do_sample=True, typical_p=0.5))
    assert sampling_warpers(GenerationConfig(do_sample=False)) == []


def test_micro_batches_fit_the_memory_bound(tiny):
    from transformers import GenerationConfig

    model, tok = tiny
    per_token = kv_cache_bytes_per_token(model.config, 4)
    text = model.config
    assert (
        per_token
        == 2
        * text.num_hidden_layers
        * text.num_key_value_heads
        * (text.hidden_size // text.num_attention_heads)
        * 4
    )
    # an 8B-like shape (32 layers, 8 KV heads of 128, bf16) at 4k tokens: 0.5 GiB per sequence, 16 in 8 GiB
    assert micro_batch_size(8 * 2**30, 2 * 32 * 8 * 128 * 2, 4096, 0) == 16
    assert micro_batch_size(1, 10**6, 10**6, 10**6) == 1  # never zero

    config = GenerationConfig(max_new_tokens=4, do_sample=True, pad_token_id=tok.pad_token_id)
    prompts = [[1, 50 + i] for i in range(7)]
    budget = 3 * (per_token * 6 + 12 * text.vocab_size)  # three sequences of 2 prompt + 4 new tokens
    backend = TransformersBackend(
        lambda: contextlib.nullcontext(model),
        config,
        tok.pad_token_id,
        [tok.eos_token_id],
        kv_cache_budget_bytes=budget,
    )
    outputs = backend.generate(prompts)
    assert backend.last_micro_batch == 3 and len(outputs) == 7
    assert all(len(o.token_ids) == len(o.logprobs) for o in outputs)


def test_merged_lora_generates_like_the_unmerged_model_and_restores_the_weights(tiny):
    peft = pytest.importorskip("peft")
    from transformers import GenerationConfig

    from trl_ext.generation import merged_lora

    model, tok = tiny
    lora = peft.get_peft_model(
        model, peft.LoraConfig(r=4, target_modules="all-linear", lora_dropout=0.0, init_lora_weights=False)
    )  # non-zero B: the adapter matters
    before = {n: p.detach().clone() for n, p in lora.named_parameters() if "lora" not in n}
    config = GenerationConfig(
        max_new_tokens=8, do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=[]
    )
    plain = TransformersBackend(lambda: contextlib.nullcontext(lora), config, tok.pad_token_id, [10**9])
    merged = TransformersBackend(
        lambda: contextlib.nullcontext(lora), config, tok.pad_token_id, [10**9], merge_lora=True
    )
    prompts = [[1, 50, 60], [1, 70, 80, 90]]
    expected, got = plain.generate(prompts), merged.generate(prompts)
    assert [o.token_ids for o in got] == [o.token_ids for o in expected]
    assert torch.allclose(
        torch.tensor([o.logprobs for o in got]), torch.tensor([o.logprobs for o in expected]), atol=1e-4
    )
    with merged_lora(lora):
        assert any(getattr(m, "merged", False) for m in lora.modules())
    assert not any(getattr(m, "merged", False) for m in lora.modules())
    drift = max(
        (p.detach() - before[n]).abs().max().item() for n, p in lora.named_parameters() if "lora" not in n
    )
    assert drift < 1e-5  # fp32: merge + unmerge round-trips to within rounding
    lora.unload()


def test_generation_memory_bound_is_validated():
    pytest.importorskip("trl")
    from trl_ext import MultiTurnKernelConfig

    with pytest.raises(ValueError, match="generation_kv_cache_gib"):
        MultiTurnKernelConfig(output_dir="/tmp/x", use_cpu=True, bf16=False, generation_kv_cache_gib=0.0)


def test_merging_bf16_base_weights_is_refused():
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    from trl_ext.generation import merged_lora
    from trl_ext.tiny_model import save_tiny_model

    model = AutoModelForCausalLM.from_pretrained(
        save_tiny_model(__import__("pathlib").Path(__import__("tempfile").mkdtemp())), dtype=torch.bfloat16
    )
    lora = peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules="all-linear"))
    with pytest.raises(ValueError, match="fp32 base weights"), merged_lora(lora):
        pass


def test_vllm_sampling_stops_at_the_chat_templates_end_of_turn():
    """A base model's eos is not the chat template's end of turn: vLLM is told both, and keeps what was asked."""
    from trl_ext.generation import with_stop_tokens

    assert with_stop_tokens(None, [7, 2, 7]) == {"stop_token_ids": [7, 2]}
    merged = with_stop_tokens({"stop_token_ids": [2], "seed": 1}, [7, 2])
    assert merged == {"stop_token_ids": [2, 7], "seed": 1}


def test_bf16_autocast_generation_reports_logprobs_that_differ_from_the_trainers(tiny):
    """generation_autocast: a rollout engine with its own numerics. The sampled tokens' log-probs it records come
    from bf16 logits, so they differ from an fp32 forward over the same tokens (what MRS compares); without it
    they agree."""
    from transformers import GenerationConfig

    model, tok = tiny
    config = GenerationConfig(
        max_new_tokens=16, do_sample=True, temperature=1.0, top_k=0, top_p=1.0, pad_token_id=tok.pad_token_id
    )
    config.eos_token_id = []
    prompt = [1, 50, 60, 70]

    def gap(autocast_dtype=None, weights_dtype=None):
        backend = TransformersBackend(
            lambda: contextlib.nullcontext(model),
            config,
            tok.pad_token_id,
            [10**9],
            autocast_dtype=autocast_dtype,
            weights_dtype=weights_dtype,
        )
        torch.manual_seed(5)
        (out,) = backend.generate([prompt])
        ids = torch.tensor([prompt + out.token_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : -1].float()
        trainer = torch.log_softmax(logits, -1).gather(-1, torch.tensor(out.token_ids)[:, None])[:, 0]
        return (trainer - torch.tensor(out.logprobs)).abs().max().item()

    assert gap() < 1e-4
    assert gap(autocast_dtype=torch.bfloat16) > 1e-3
    before = [p.detach().clone() for p in model.parameters()]
    assert gap(weights_dtype=torch.bfloat16) > 1e-4  # a rounded copy of the weights generates
    # as under a trainer: accelerate wraps forward in a function holding the original model (a deep copy kept it)
    forward = model.forward
    model.forward = lambda *args, **kwargs: forward(*args, **kwargs)
    try:
        assert gap(weights_dtype=torch.bfloat16) > 1e-4
    finally:
        del model.forward
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the trainer's weights keep theirs
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters(), strict=True))


def test_generation_autocast_is_validated():
    pytest.importorskip("trl")
    from trl_ext import MultiTurnKernelConfig

    with pytest.raises(ValueError, match="generation_autocast"):
        MultiTurnKernelConfig(output_dir="/tmp/x", use_cpu=True, bf16=False, generation_autocast="float8")
    with pytest.raises(ValueError, match="generation_weights"):
        MultiTurnKernelConfig(output_dir="/tmp/x", use_cpu=True, bf16=False, generation_weights="float8")
