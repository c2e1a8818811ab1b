"""What runs before any candidate code: code extraction, static checks on the AST, size constants of a
program's source. Imports no torch."""
