"""Evaluation harness: Fast@p for models and saved completions, multi-turn, test-time scaling, reports.

Modules, one job each: ``metrics`` (pure metric math), ``completions`` (saved-completions JSONL),
``ttscaling`` (test-time scaling context selection), ``harness`` (runs samples x turns through the
Evaluator with a resume cache), ``report`` (summary.json, report.md, plots, run comparison), ``cli``
(the ``drkernel-evaluate`` / ``scripts/evaluate.py`` command line).
"""
