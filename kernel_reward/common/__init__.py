"""Helpers both processes of an evaluation use: loading a program as a module, tensor helpers, error text."""
