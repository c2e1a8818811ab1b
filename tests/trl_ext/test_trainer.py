"""TRLOOTrainer on CPU: a tiny random Qwen2 + locally trained tokenizer, driven by the toy environment."""

import contextlib
import math
from dataclasses import replace
from itertools import product

import pytest
import torch

datasets = pytest.importorskip("datasets")
pytest.importorskip("trl")

from trl_ext import DigitGuessEnvironment, MultiTurnKernelConfig, TRLOOTrainer, make_toy_tasks  # noqa: E402
from trl_ext.env import StepResult  # noqa: E402
from trl_ext.generation import GenerationOutput, TransformersBackend  # noqa: E402
from trl_ext.rollout import FEEDBACK_TOKEN, FeedbackTokenizer, MultiTurnRollout  # noqa: E402
from trl_ext.tiny_model import save_tiny_model  # noqa: E402


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return save_tiny_model(tmp_path_factory.mktemp("tiny"))


def load(tiny_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(tiny_dir), AutoTokenizer.from_pretrained(tiny_dir)


def make_args(tmp_path, **overrides):
    values = dict(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=6,
        max_steps=2,
        learning_rate=5e-3,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        max_turns=3,
        seed=0,
    )
    values.update(overrides)
    return MultiTurnKernelConfig(**values)


def scored_batch(model, tok, args, environment=None):
    """A trainer on four toy tasks, in training mode, and its scored generation batch (the loss inputs)."""
    trainer = TRLOOTrainer(
        model=model,
        environment=environment or DigitGuessEnvironment(),
        args=args,
        train_dataset=datasets.Dataset.from_list(make_toy_tasks(4)),
        processing_class=tok,
    )
    trainer.model.train()  # metrics go to the training side
    trainer.current_gradient_accumulation_steps = (
        1  # set by train(); the loss is called directly in some tests
    )
    return trainer, trainer._generate_and_score_completions([dict(r) for r in trainer.train_dataset])


def run_trainer(tiny_dir, tmp_path, peft_config=None, **overrides):
    model, tok = load(tiny_dir)
    dataset = datasets.Dataset.from_list(make_toy_tasks(8))
    trainer = TRLOOTrainer(
        model=model,
        environment=DigitGuessEnvironment(),
        args=make_args(tmp_path, **overrides),
        train_dataset=dataset,
        processing_class=tok,
        peft_config=peft_config,
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])}
    return trainer, before, changed


def test_multi_turn_steps_with_grad_accumulation(tiny_dir, tmp_path):
    trainer, before, changed = run_trainer(tiny_dir, tmp_path, gradient_accumulation_steps=2, use_mrs=True)
    assert trainer.state.global_step == 2
    assert len(changed) == len(before), f"unchanged: {set(before) - changed}"
    logs = [h for h in trainer.state.log_history if "turn_1/reward" in h]
    assert len(logs) == 2
    for h in logs:
        assert h["turn_3/reached_frac"] == 1.0  # the toy never ends episodes early
        assert h["turn_2/tokens"] > 0 and h["mrs/rejected_frac"] == 0.0  # same model samples and scores
        assert h["mrs/mean_abs_log_ratio"] < 1e-4
        assert "time/optimization_s" in h and "time/generation_s" in h
    # The trajectories of the last rollout: three model turns separated by feedback tokens.
    traj = trainer._trajectories[0]
    assert len(traj.turns) == 3 and traj.env_mask.count(0) > 0


def test_lora_trains_only_adapters(tiny_dir, tmp_path):
    from peft import LoraConfig

    lora = LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
    )
    trainer, before, changed = run_trainer(tiny_dir, tmp_path, peft_config=lora)
    lora_names = {n for n in before if "lora_B" in n}
    assert lora_names and lora_names <= changed
    assert all("lora_" in n for n in changed), (
        f"non-adapter weights changed: {[n for n in changed if 'lora_' not in n]}"
    )


def test_feedback_tokens_carry_no_loss(tiny_dir, tmp_path):
    model, tok = load(tiny_dir)
    dataset = datasets.Dataset.from_list(make_toy_tasks(4))
    trainer = TRLOOTrainer(
        model=model,
        environment=DigitGuessEnvironment(),
        args=make_args(tmp_path),
        train_dataset=dataset,
        processing_class=tok,
    )
    rows = [dict(r) for r in dataset for _ in range(1)]
    inputs = trainer._generate_and_score_completions(rows)
    loss_mask = (inputs["completion_mask"] * inputs["tool_mask"]).cpu()
    for n, traj in enumerate(trainer._trajectories):
        expected = torch.tensor(traj.env_mask)
        assert torch.equal(loss_mask[n, : len(expected)], expected)
        assert loss_mask[n, len(expected) :].sum() == 0
        feedback = torch.tensor(traj.turn_ids) == FEEDBACK_TOKEN
        assert feedback.any() and (inputs["advantages"][n, : len(expected)][feedback] == 0).all()
        assert "The secret digit is" in tok.decode(
            [t for t, m in zip(traj.completion_ids, traj.env_mask, strict=True) if not m]
        )
    # Giving feedback tokens huge advantages must not change the loss: they are outside the loss mask.
    with torch.no_grad():
        base = trainer._compute_loss(trainer.model, inputs).item()
        poisoned = dict(inputs)
        poisoned["advantages"] = inputs["advantages"] + 1e3 * (loss_mask == 0).float()
        assert trainer._compute_loss(trainer.model, poisoned).item() == pytest.approx(base, abs=1e-6)
        shifted = dict(inputs)
        shifted["advantages"] = inputs["advantages"] + 1e3 * loss_mask.float()
        assert abs(trainer._compute_loss(trainer.model, shifted).item() - base) > 1.0  # the mask is not empty


class SkewedBackend(TransformersBackend):
    """Reports rollout log-probs 0.1 nats too high, as a mismatched inference engine would."""

    def generate(self, prompts):
        return [
            GenerationOutput(o.token_ids, [lp + 0.1 for lp in o.logprobs]) for o in super().generate(prompts)
        ]


class SkewedTrainer(TRLOOTrainer):
    def _generation_backend(self):
        plain = super()._generation_backend()
        return SkewedBackend(
            plain.model_context, plain.generation_config, plain.pad_token_id, plain.eos_token_ids
        )


@pytest.mark.parametrize("accumulation", [1, 2], ids=["in_loss", "at_generation"])
def test_mrs_rejects_mismatched_rollouts(tiny_dir, tmp_path, monkeypatch, accumulation):
    """Every trajectory is 0.1 nats off: all rejected, so a step leaves the weights as they were.

    With one micro-batch per generation batch MRS is decided inside the loss from the loss's own forward pass
    (one forward per micro-batch); with DAPO over two micro-batches it is decided at generation time, which
    costs one extra no-grad forward over the generation batch.
    """
    from trl import GRPOTrainer

    forwards = []
    base_forward = GRPOTrainer._get_per_token_logps_and_entropies

    def counting_forward(self, model, input_ids, *args, **kwargs):
        forwards.append(input_ids.size(0))
        return base_forward(self, model, input_ids, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "_get_per_token_logps_and_entropies", counting_forward)
    model, tok = load(tiny_dir)
    args = make_args(
        tmp_path,
        use_mrs=True,
        max_steps=1,
        gradient_accumulation_steps=accumulation,
        per_device_train_batch_size=4 // accumulation,
    )
    trainer = SkewedTrainer(
        model=model,
        environment=DigitGuessEnvironment(),
        args=args,
        train_dataset=datasets.Dataset.from_list(make_toy_tasks(4)),
        processing_class=tok,
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert all(torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())
    log = next(h for h in trainer.state.log_history if "mrs/rejected_frac" in h)
    assert log["mrs/rejected_frac"] == 1.0 and log["filters/loss_token_frac"] == 0.0
    assert log["mrs/mean_abs_log_ratio"] == pytest.approx(0.1, abs=1e-3)
    # Forward passes over the 4 trajectories: the loss's alone, or one more for MRS at generation time.
    assert sum(forwards) == (4 if accumulation == 1 else 8), forwards


def test_mrs_in_loss_equals_pure_mask_and_rejected_tokens_get_no_gradient(tiny_dir, tmp_path, monkeypatch):
    from trl import GRPOTrainer

    from trl_ext.mrs import mrs_loss_mask

    model, tok = load(tiny_dir)
    trainer, inputs = scored_batch(model, tok, make_args(tmp_path, use_mrs=True, max_steps=1))
    assert "mrs_mask" in inputs  # one micro-batch per generation batch: MRS is left to the loss
    model_tokens, turn_ids = inputs["mrs_mask"], inputs["mrs_turn_ids"]
    assert torch.equal(inputs["completion_mask"] * inputs["tool_mask"], model_tokens)  # not masked yet
    train_logps = trainer._train_logps(inputs)  # (B, L) a separate no-grad forward, as the reference
    # Rollout log-probs: row 0 0.1 nats off everywhere; row 1 a single vetoed token in turn 2; rows 2-3 exact.
    rollout = train_logps.clone()
    rollout[0] += 0.1
    vetoed = torch.nonzero((turn_ids[1] == 1) & (model_tokens[1] == 1))[0, 0]
    rollout[1, vetoed] += 12.0
    inputs["sampling_per_token_logps"] = rollout
    # Random non-zero advantages, so that every loss token has a gradient to lose.
    inputs["advantages"] = torch.randn(inputs["advantages"].shape, generator=torch.Generator().manual_seed(0))

    seen = []
    base_loss = GRPOTrainer._compute_loss

    def recording_loss(self, model, batch):
        seen.append(batch)
        return base_loss(self, model, batch)

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", recording_loss)

    def loss_and_grads(batch):
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        return loss.item(), [p.grad.clone() for p in trainer.model.parameters()]

    expected_rejected = {
        "trajectory": [True, True, False, False],
        "turn": [True, True, False, False],
        "token": [True, True, False, False],
    }
    for level in ("trajectory", "turn", "token"):
        trainer.args.mrs_level = level
        keep = mrs_loss_mask(train_logps, rollout, model_tokens, level, turn_ids, 3).keep  # (B, L)
        loss_keep = model_tokens.bool() & keep
        assert [bool(r) for r in (model_tokens.bool() & ~keep).any(dim=1)] == expected_rejected[level]
        for loss_type in ("dapo", "grpo"):
            trainer.loss_type = loss_type
            loss, grads = loss_and_grads(inputs)
            # The base loss saw exactly the pure function's mask, and DAPO's normaliser counts only kept tokens.
            assert torch.equal(seen[-1]["tool_mask"].bool(), loss_keep), (level, loss_type)
            assert int(seen[-1]["num_items_in_batch"]) == (
                int(loss_keep.sum()) if loss_type == "dapo" else int(model_tokens.sum())
            )
            # Same loss and gradient as the base loss given that mask up front (the generation-time path).
            upfront = {k: v for k, v in inputs.items() if not k.startswith("mrs_")}
            upfront["tool_mask"] = inputs["tool_mask"] * keep.to(inputs["tool_mask"].dtype)
            upfront["num_items_in_batch"] = loss_keep.sum()
            ref_loss, ref_grads = loss_and_grads(upfront)
            assert loss == pytest.approx(ref_loss, rel=1e-5, abs=1e-7)
            assert all(
                torch.allclose(g, r, rtol=1e-4, atol=1e-7) for g, r in zip(grads, ref_grads, strict=True)
            )
            # Rejected tokens carry no gradient: huge advantages on them change nothing; on kept tokens they do.
            poisoned = dict(inputs, advantages=inputs["advantages"] + 1e3 * (model_tokens.bool() & ~keep))
            _, poisoned_grads = loss_and_grads(poisoned)
            assert all(
                torch.allclose(g, r, rtol=1e-4, atol=1e-7) for g, r in zip(grads, poisoned_grads, strict=True)
            )
            moved = dict(inputs, advantages=inputs["advantages"] + 1e3 * loss_keep)
            _, moved_grads = loss_and_grads(moved)
            assert not all(torch.allclose(g, r) for g, r in zip(grads, moved_grads, strict=True))
    trainer._flush_mrs_metrics("train")
    metrics = trainer._metrics["train"]
    assert metrics["mrs/rejected_frac"][-1] > 0 and metrics["filters/loss_token_frac"][-1] < 1.0
    # Evaluation has no accumulation window: the loss logs its own counts (token level, the last one set above).
    trainer.model.eval()
    with torch.no_grad():
        trainer.compute_loss(trainer.model, inputs)
    rejected = (model_tokens.bool() & ~keep).sum() / model_tokens.sum()
    assert trainer._metrics["eval"]["mrs/rejected_frac"] == [pytest.approx(float(rejected))]


def test_config_rejects_bad_combinations(tmp_path):
    with pytest.raises(ValueError, match="top_p"):
        make_args(tmp_path, use_mrs=True, top_p=0.9)
    with pytest.raises(ValueError, match="max_turns"):
        make_args(tmp_path, max_turns=0)
    with pytest.raises(ValueError, match="at least 2 generations"):
        make_args(tmp_path, num_generations=1, per_device_train_batch_size=1)
    with pytest.raises(ValueError, match="grpo_turn_scale_std"):
        make_args(tmp_path, grpo_turn_scale_std=True)


class ScriptedBackend:
    """Returns fixed texts (tokenised, ending with eos) turn after turn."""

    def __init__(self, tok, texts_per_turn):
        self.tok, self.texts, self.calls = tok, texts_per_turn, 0

    def generate(self, prompts):
        texts = self.texts[self.calls]
        self.calls += 1
        out = []
        for i, _ in enumerate(prompts):
            ids = self.tok.encode(texts[i % len(texts)], add_special_tokens=False) + [self.tok.eos_token_id]
            out.append(GenerationOutput(ids, [-1.0] * len(ids)))
        return out


class RecordingEnv(DigitGuessEnvironment):
    def __init__(self):
        super().__init__(stop_on_success=True)
        self.seen = []

    def step(self, states, completions):
        self.seen.append(list(completions))
        return super().step(states, completions)


def test_rollout_appends_feedback_as_tokens_and_stops_done_episodes(tiny_dir):
    _, tok = load(tiny_dir)
    tasks = make_toy_tasks(3, seed=1)
    secrets = [t["reward_model"]["ground_truth"] for t in tasks]
    wrong = str((int(secrets[0]) + 1) % 10)
    # Turn 1: task 0 answers its secret (done), others a wrong digit; turn 2: everyone answers `wrong`.
    backend = ScriptedBackend(tok, [[secrets[0], wrong, wrong], [wrong]])
    env = RecordingEnv()
    rollout = MultiTurnRollout(
        backend, env, tok, max_turns=2, end_of_turn_id=tok.eos_token_id, feedback_max_chars=25
    )
    trajs = rollout.run(tasks)
    assert [len(t.turns) for t in trajs] == [1, 2, 2] and len(env.seen[1]) == 2
    assert trajs[0].rewards == [1.0] and trajs[0].env_mask == [1] * len(trajs[0].completion_ids)
    t1 = trajs[1]
    fb_ids = FeedbackTokenizer(tok, tok.eos_token_id)(f"Wrong. The secret digit is {secrets[1]}"[:25])
    first = len(t1.turns[0].completion_ids)
    assert t1.completion_ids[first : first + 3] == fb_ids[:3]  # feedback appended right after the eos
    assert rollout.stats.feedback_truncated == 2  # 27-28 character feedback cut at 25
    assert t1.turn_ids.count(FEEDBACK_TOKEN) == t1.env_mask.count(0)
    assert all(math.isfinite(x) for x in t1.logprobs)


def test_rollout_rejects_bad_step_results(tiny_dir):
    _, tok = load(tiny_dir)

    class NanEnv(DigitGuessEnvironment):
        def step(self, states, completions):
            return [StepResult(reward=float("nan"), feedback="?") for _ in states]

    backend = ScriptedBackend(tok, [["1"]])
    with pytest.raises(ValueError, match="finite"):
        MultiTurnRollout(backend, NanEnv(), tok, 1, tok.eos_token_id).run(make_toy_tasks(1))


def test_transformers_backend_logprobs_match_forward(tiny_dir):
    from transformers import GenerationConfig

    model, tok = load(tiny_dir)
    config = GenerationConfig(
        max_new_tokens=5,
        do_sample=True,
        temperature=0.7,
        top_k=0,
        top_p=1.0,
        pad_token_id=tok.pad_token_id,
        eos_token_id=[tok.eos_token_id],
    )
    backend = TransformersBackend(
        lambda: contextlib.nullcontext(model), config, tok.pad_token_id, [tok.eos_token_id]
    )
    prompts = [[1, 50, 60], [1, 70]]
    outs = backend.generate(prompts)
    assert backend.generate([]) == []
    for prompt, out in zip(prompts, outs, strict=True):
        ids = torch.tensor([prompt + out.token_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(prompt) - 1 : -1] / 0.7
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(out.token_ids)[:, None])[:, 0]
        assert torch.allclose(expected, torch.tensor(out.logprobs), atol=1e-4)


def test_toy_environment_rewards_and_unscored_first_turn():
    tasks = make_toy_tasks(2, seed=0, num_choices=1)  # both secrets are "0"
    env = DigitGuessEnvironment(reward_from_turn=2)
    states = env.reset(tasks)
    first = env.step(states, ["0", "x"])
    assert (
        [r.reward for r in first] == [0.0, 0.0]
        and first[0].correct
        and "The secret digit is 0" in first[1].feedback
    )
    second = env.step(states, ["0 then", "7"])
    assert [r.reward for r in second] == [1.0, 0.2]
    with pytest.raises(ValueError, match="num_choices"):
        make_toy_tasks(1, num_choices=11)


class LowCoverageEnv(DigitGuessEnvironment):
    """Turn 1 is correct with coverage 0.1 (PRS keep probability 0); later turns are incorrect."""

    def step(self, states, completions):
        results = super().step(states, completions)
        for state, r in zip(states, results, strict=True):
            first = state["turn"] == 1
            r.correct, r.coverage, r.reward = first, (0.1 if first else None), (1.0 if first else 0.0)
        return results


def test_prs_and_recipe_filters_mask_the_loss(tiny_dir, tmp_path):
    model, tok = load(tiny_dir)
    args = make_args(
        tmp_path, use_prs=True, mask_failed_turns_after_success=True, drop_tied_groups=True, max_turns=2
    )
    trainer, inputs = scored_batch(model, tok, args, environment=LowCoverageEnv())
    metrics = trainer._metrics["train"]
    # Turn 1: PRS rejects (correct, coverage 0.1 < 0.3); turn 2: reward 0 after a success -> masked too;
    # and every group ties on its last-turn reward (all 0) -> dropped. Nothing is left to train on.
    assert metrics["prs/rejected_frac_of_correct"][-1] == 1.0
    assert metrics["filters/failed_after_success_frac"][-1] == pytest.approx(0.5)
    assert metrics["filters/tied_group_frac"][-1] == 1.0
    assert inputs["tool_mask"].sum() == 0 and inputs["num_items_in_batch"] == 0
    # The advantages are still computed from every sample (rejected samples stay in the baselines).
    assert torch.all(inputs["advantages"] == 0)  # all rewards tie within each group at both turns


class FirstSampleUnscoredEnv(DigitGuessEnvironment):
    """Every turn of the first sample is an infrastructure failure (unscored); the others are scored."""

    def reset(self, tasks):
        states = super().reset(tasks)
        states[0]["unscored"] = True
        return states

    def step(self, states, completions):
        results = super().step(states, completions)
        for state, r in zip(states, results, strict=True):
            if state.get("unscored"):
                r.scored, r.reward = False, 0.0
        return results


def test_a_wholly_unscored_trajectory_leaves_the_tie_filter_and_the_loss(tiny_dir, tmp_path):
    model, tok = load(tiny_dir)
    args = make_args(  # the options of the GPU recipe (recipes/qwen05b_trloo.yaml) that read the rewards
        tmp_path,
        drop_tied_groups=True,
        use_mrs=True,
        use_prs=True,
        mask_failed_turns_after_success=True,
        max_turns=2,
    )
    trainer, inputs = scored_batch(model, tok, args, environment=FirstSampleUnscoredEnv())
    assert trainer._trajectories[0].turns and not any(t.result.scored for t in trainer._trajectories[0].turns)
    assert inputs["tool_mask"][0].sum() == 0  # the unscored trajectory trains nowhere
    assert torch.all(inputs["advantages"][0] == 0)


def test_config_keeps_one_optimizer_step_per_generation_batch(tmp_path):
    with pytest.raises(ValueError, match="steps_per_generation=4 with gradient_accumulation_steps=1"):
        make_args(tmp_path, steps_per_generation=4)
    with pytest.raises(ValueError, match="gradient_accumulation_steps=3"):
        make_args(
            tmp_path, steps_per_generation=2, gradient_accumulation_steps=3
        )  # 2nd step straddles batches
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        make_args(tmp_path, generation_batch_size=16)  # 4 micro-batches of 4, one accumulation step
    assert (
        make_args(tmp_path, steps_per_generation=4, gradient_accumulation_steps=4).generation_batch_size == 16
    )
    assert (
        make_args(tmp_path, steps_per_generation=2, gradient_accumulation_steps=4).generation_batch_size == 8
    )


def test_config_turns_dropout_off_for_mrs(tmp_path):
    assert make_args(tmp_path, use_mrs=True).disable_dropout is True
    assert make_args(tmp_path).disable_dropout is False
    assert make_args(tmp_path, disable_dropout=True).disable_dropout is True
    with pytest.raises(ValueError, match="disable_dropout"):
        make_args(tmp_path, use_mrs=True, disable_dropout=False)


def test_mrs_refuses_lora_dropout(tiny_dir, tmp_path):
    from peft import LoraConfig

    model, tok = load(tiny_dir)
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=["q_proj"], task_type="CAUSAL_LM")
    with pytest.raises(ValueError, match="lora_dropout=0.1"):
        TRLOOTrainer(
            model=model,
            environment=DigitGuessEnvironment(),
            args=make_args(tmp_path, use_mrs=True),
            train_dataset=datasets.Dataset.from_list(make_toy_tasks(4)),
            processing_class=tok,
            peft_config=lora,
        )


def test_mrs_trains_a_model_configured_with_dropout(tiny_dir, tmp_path):
    """A checkpoint whose config has attention dropout: the trainer turns it off, MRS keeps every trajectory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_dir, attention_dropout=0.5)
    trainer = TRLOOTrainer(
        model=model,
        environment=DigitGuessEnvironment(),
        args=make_args(tmp_path, use_mrs=True, max_steps=1),
        train_dataset=datasets.Dataset.from_list(make_toy_tasks(8)),
        processing_class=AutoTokenizer.from_pretrained(tiny_dir),
    )
    assert all(m.attention_dropout == 0.0 for m in trainer.model.modules() if hasattr(m, "attention_dropout"))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    logs = [h for h in trainer.state.log_history if "mrs/rejected_frac" in h]
    assert logs and logs[0]["mrs/rejected_frac"] == 0.0
    assert any(not torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())


def test_bf16_trainable_weights_warn(tiny_dir, tmp_path):
    model, tok = load(tiny_dir)
    with pytest.warns(UserWarning, match="round away"):
        TRLOOTrainer(
            model=model.to(torch.bfloat16),
            environment=DigitGuessEnvironment(),
            args=make_args(tmp_path),
            train_dataset=datasets.Dataset.from_list(make_toy_tasks(4)),
            processing_class=tok,
        )


# A Qwen3-style chat template: a finished assistant turn is rendered with an empty think block only while it is the
# last turn, and `enable_thinking=False` appends an empty think block to the generation header.
QWEN3_LIKE_TEMPLATE = (
    "{% set ns = namespace(last_user=-1) %}"
    "{% for m in messages %}{% if m['role'] == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}{% endfor %}"
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' and loop.index0 > ns.last_user %}"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n{{ m['content'] }}<|im_end|>\n"
    "{% else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)
NO_THINKING = {"enable_thinking": False}
EMPTY_THINK = "<think>\n\n</think>\n\n"


def qwen3_like_tokenizer():
    from trl_ext.tiny_model import build_tokenizer

    tok = build_tokenizer()
    tok.chat_template = QWEN3_LIKE_TEMPLATE
    return tok


def test_feedback_tokens_with_a_qwen3_style_template():
    tok = qwen3_like_tokenizer()
    plain = FeedbackTokenizer(tok, tok.eos_token_id)("Wrong.")
    assert tok.decode(plain) == "\n<|im_start|>user\nWrong.<|im_end|>\n<|im_start|>assistant\n"
    no_thinking = FeedbackTokenizer(tok, tok.eos_token_id, NO_THINKING)("Wrong.")
    assert (
        tok.decode(no_thinking)
        == "\n<|im_start|>user\nWrong.<|im_end|>\n<|im_start|>assistant\n" + EMPTY_THINK
    )


def test_rollout_passes_chat_template_kwargs_to_every_turn():
    tok = qwen3_like_tokenizer()
    tasks = make_toy_tasks(2, seed=1)
    wrong = [str((int(t["reward_model"]["ground_truth"]) + 1) % 10) for t in tasks]
    rollout = MultiTurnRollout(
        ScriptedBackend(tok, [wrong, wrong, wrong]),
        DigitGuessEnvironment(),
        tok,
        max_turns=3,
        end_of_turn_id=tok.eos_token_id,
        chat_template_kwargs=NO_THINKING,
    )
    for traj in rollout.run(tasks):
        assert len(traj.turns) == 3
        assert tok.decode(traj.prompt_ids).endswith("<|im_start|>assistant\n" + EMPTY_THINK)
        feedback = tok.decode([t for t, m in zip(traj.completion_ids, traj.env_mask, strict=True) if not m])
        assert feedback.count("<|im_start|>assistant\n" + EMPTY_THINK) == 2  # both feedback turns


def test_trainer_uses_chat_template_kwargs(tiny_dir, tmp_path):
    model, tok = load(tiny_dir)
    tok.chat_template = QWEN3_LIKE_TEMPLATE
    trainer, _ = scored_batch(model, tok, make_args(tmp_path, chat_template_kwargs=NO_THINKING))
    for traj in trainer._trajectories:
        assert tok.decode(traj.prompt_ids).endswith(EMPTY_THINK)
        if len(traj.turns) > 1:
            assert EMPTY_THINK in tok.decode(
                [t for t, m in zip(traj.completion_ids, traj.env_mask, strict=True) if not m]
            )


def test_turn_sum_mean_divides_token_losses_by_trained_turns(tiny_dir, tmp_path):
    """loss_aggregation='turn_sum_mean': the dapo normaliser is the number of trained (trajectory, turn) pairs."""
    with pytest.raises(ValueError, match="loss_type='dapo'"):
        make_args(tmp_path, loss_aggregation="turn_sum_mean", loss_type="grpo")
    model, tok = load(tiny_dir)
    trainer, inputs = scored_batch(
        model,
        tok,
        make_args(tmp_path, loss_aggregation="turn_sum_mean", mask_failed_turns_after_success=True),
    )
    loss_mask = (inputs["completion_mask"] * inputs["tool_mask"]).cpu()
    trained_turns = 0
    for n, traj in enumerate(trainer._trajectories):  # plain loop: turns with at least one loss token
        for k in range(len(traj.turns)):
            trained_turns += any(t == k and loss_mask[n, j] for j, t in enumerate(traj.turn_ids))
    loss_tokens = int(loss_mask.sum())
    assert int(inputs["num_items_in_batch"]) == trained_turns < loss_tokens
    inputs["advantages"] = torch.randn(inputs["advantages"].shape, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        per_turn = trainer._compute_loss(trainer.model, inputs).item()
        per_token = trainer._compute_loss(
            trainer.model, {**inputs, "num_items_in_batch": torch.tensor(loss_tokens)}
        )
    assert per_turn * trained_turns == pytest.approx(per_token.item() * loss_tokens, rel=1e-5)


def test_turn_sum_norm_gives_the_gradient_a_deliberate_scale(tiny_dir, tmp_path):
    """loss_aggregation='turn_sum_norm' divides the turn-sum loss by a constant per turn (max_completion_length by
    default): on the same rollouts its gradient is turn_sum_mean's / L, so max_grad_norm 1.0 no longer clips every
    step, while Adam's update without clipping is the same step."""
    runs = {}
    for aggregation, max_grad_norm in product(("turn_sum_mean", "turn_sum_norm"), (1.0, 1e9)):
        trainer, before, _ = run_trainer(
            tiny_dir,
            tmp_path / f"{aggregation}{max_grad_norm}",
            max_steps=1,
            loss_aggregation=aggregation,
            max_grad_norm=max_grad_norm,
        )
        entry = next(e for e in trainer.state.log_history if "grad_norm" in e)
        update = torch.cat([(p.detach() - before[n]).flatten() for n, p in trainer.model.named_parameters()])
        runs[aggregation, max_grad_norm] = entry, update
    summed, scaled = runs["turn_sum_mean", 1.0][0], runs["turn_sum_norm", 1.0][0]
    assert summed["grad_norm"] == pytest.approx(6 * scaled["grad_norm"], rel=1e-4)  # max_completion_length 6
    assert summed["clip_coefficient"] < 1.0 == scaled["clip_coefficient"], (summed, scaled)
    unclipped = [runs[a, 1e9][1] for a in ("turn_sum_mean", "turn_sum_norm")]
    assert float((unclipped[0] - unclipped[1]).norm() / unclipped[0].norm()) < 0.02
    with pytest.raises(ValueError, match="turn_sum_norm' only"):
        make_args(tmp_path, loss_scale_tokens=4)
    with pytest.raises(ValueError, match="positive integer"):
        make_args(tmp_path, loss_aggregation="turn_sum_norm", loss_scale_tokens=0)


def test_turn_sum_norm_divides_by_trained_turns_times_the_scale(tiny_dir, tmp_path):
    """The normaliser is turn_sum_mean's (trained turns, checked above) times loss_scale_tokens, by default
    max_completion_length; the same seed gives the same rollouts."""
    model, tok = load(tiny_dir)
    counts = {}
    for aggregation, scale in (("turn_sum_mean", None), ("turn_sum_norm", None), ("turn_sum_norm", 5)):
        trainer, inputs = scored_batch(
            model, tok, make_args(tmp_path, loss_aggregation=aggregation, loss_scale_tokens=scale)
        )
        counts[aggregation, scale] = int(inputs["num_items_in_batch"])
    turns = counts["turn_sum_mean", None]
    assert (
        turns > 0 and counts["turn_sum_norm", None] == 6 * turns and counts["turn_sum_norm", 5] == 5 * turns
    )


def test_the_control_arm_trains_on_rewards_permuted_within_groups(tiny_dir, tmp_path):
    """reward_control='permute_within_group': on the same rollouts the advantages are TRLOO's of the group-permuted
    rewards (the trainer's seeded generator), not of the true ones; the logged rewards stay the true ones."""
    from trl_ext import permute_within_groups, trloo_advantages
    from trl_ext.masks import turn_tensors

    class LengthRewardEnv(DigitGuessEnvironment):  # a reward that differs between samples of a group
        def step(self, states, completions):
            return [
                replace(r, reward=float(len(c) % 7))
                for r, c in zip(super().step(states, completions), completions, strict=True)
            ]

    model, tok = load(tiny_dir)
    seen = {}
    for control in ("none", "permute_within_group"):
        trainer = TRLOOTrainer(
            model=model,
            environment=LengthRewardEnv(),
            args=make_args(tmp_path, reward_control=control, max_turns=1, num_generations=4),
            train_dataset=datasets.Dataset.from_list(make_toy_tasks(4)),
            processing_class=tok,
        )
        trainer.model.train()
        rows = [dict(r) for r in trainer.train_dataset] * 2  # two groups of 4 samples
        output = trainer._generate_and_score_completions(rows)
        _, rewards = turn_tensors(trainer._trajectories, output["completion_ids"].size(1), 1)
        advantages = output["advantages"].cpu()
        seen[control] = rewards, advantages, trainer._metrics["train"]
    (true_rewards, plain, _), (same_rewards, controlled, metrics) = seen["none"], seen["permute_within_group"]
    assert torch.equal(true_rewards, same_rewards)  # same seed, same rollouts
    groups = torch.arange(true_rewards.size(0)) // 4
    expected = trloo_advantages(
        permute_within_groups(true_rewards, groups, torch.Generator().manual_seed(0 * 7919 + 17)), groups
    )
    first_tokens = controlled[:, 0]
    assert torch.allclose(first_tokens, expected[:, 0].float())
    assert not torch.allclose(first_tokens, plain[:, 0]), (
        true_rewards.flatten(),
        first_tokens,
    )  # it did move
    assert torch.allclose(plain[:, 0], trloo_advantages(true_rewards, groups)[:, 0].float())
    assert metrics["turn_1/reward"][-1] == pytest.approx(float(true_rewards.mean()))
    assert "control/moved_reward_frac" in metrics


def test_turn_sum_mean_recounts_turns_after_in_loss_mrs(tiny_dir, tmp_path, monkeypatch):
    """With MRS decided in the loss, the turn count is taken after MRS rejected a trajectory."""
    from trl import GRPOTrainer

    model, tok = load(tiny_dir)
    trainer, inputs = scored_batch(
        model, tok, make_args(tmp_path, use_mrs=True, loss_aggregation="turn_sum_mean", max_steps=1)
    )
    assert "mrs_mask" in inputs
    turns_per_row = [len(t.turns) for t in trainer._trajectories]  # every turn has model tokens here
    assert int(inputs["num_items_in_batch"]) == sum(turns_per_row)
    inputs["sampling_per_token_logps"] = trainer._train_logps(inputs).clone()
    inputs["sampling_per_token_logps"][0] += 0.1  # row 0 fails the trajectory-level MRS test
    seen = []
    base_loss = GRPOTrainer._compute_loss

    def recording_loss(self, model, batch):
        seen.append(int(batch["num_items_in_batch"]))
        return base_loss(self, model, batch)

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", recording_loss)
    with torch.no_grad():
        trainer.compute_loss(trainer.model, inputs)
    assert seen == [sum(turns_per_row) - turns_per_row[0]]


def test_truncated_turns_are_counted_per_turn_and_can_be_masked(tiny_dir, tmp_path):
    """A turn that hits max_completion_length without its end-of-turn token is counted (turn_k/truncated) and, with
    mask_truncated_turns, carries no loss: the random tiny model never ends a 2-token turn."""
    model, tok = load(tiny_dir)
    for masked in (False, True):
        trainer, output = scored_batch(
            model, tok, make_args(tmp_path, max_completion_length=2, max_turns=2, mask_truncated_turns=masked)
        )
        assert all(turn.truncated for traj in trainer._trajectories for turn in traj.turns)
        metrics = trainer._metrics["train"]
        assert metrics["turn_1/truncated"][-1] == 1.0
        loss_tokens = float((output["completion_mask"] * output["tool_mask"]).sum())
        assert (loss_tokens == 0) is masked, loss_tokens


def test_logs_carry_the_clip_coefficient(tiny_dir, tmp_path):
    """Every logged training step says how much gradient clipping scaled it (max_grad_norm / grad_norm, <= 1)."""
    trainer, _, _ = run_trainer(tiny_dir, tmp_path, max_steps=1, max_grad_norm=0.01)
    entry = next(e for e in trainer.state.log_history if "grad_norm" in e)
    assert entry["clip_coefficient"] == pytest.approx(min(1.0, 0.01 / entry["grad_norm"]))


def test_the_mrs_alarm_warns_and_can_stop_training(tiny_dir, tmp_path, caplog):
    model, tok = load(tiny_dir)
    args = make_args(tmp_path, use_mrs=True, top_k=0, top_p=1.0, mrs_alarm_steps=2, mrs_stop_on_alarm=True)
    trainer = TRLOOTrainer(
        model=model,
        environment=DigitGuessEnvironment(),
        args=args,
        train_dataset=datasets.Dataset.from_list(make_toy_tasks(4)),
        processing_class=tok,
    )
    for rejected, streak in ((0.9, 1), (0.2, 0), (0.8, 1), (0.95, 2)):
        trainer._metrics["train"]["mrs/rejected_frac"] = [rejected]
        with caplog.at_level("WARNING", logger="trl_ext.trainer"):
            trainer.log({"loss": 1.0})
        assert trainer.state.log_history[-1]["mrs/high_rejection_streak"] == streak
        assert trainer.control.should_training_stop is (streak == 2)
    assert "MRS rejected 95 %" in caplog.text and "stopping" in caplog.text
    with pytest.raises(ValueError, match="mrs_alarm_steps"):
        make_args(tmp_path, mrs_alarm_steps=0)
