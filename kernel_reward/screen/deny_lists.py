"""The static screen's deny-lists: the modules, builtins and attributes a candidate may not reach for.

A cheap filter with named reasons, never the security boundary (docs/security.md).
"""

from __future__ import annotations

FORBIDDEN_MODULES = frozenset(
    {
        "threading",
        "_thread",
        "multiprocessing",
        "subprocess",
        "ctypes",
        "cffi",
        "socket",
        "ssl",
        "signal",
        "concurrent",
        "asyncio",
        "shutil",
        "gc",
        "inspect",
        "builtins",
        "pty",
        "select",
        "selectors",
        "mmap",
        "resource",
        "urllib",
        "http",
        "requests",
        "pathlib",
        "glob",
        "tempfile",
        "pickle",
        "marshal",
        "shelve",
        "sqlite3",
        "kernel_reward",
        "pytest",
        "runpy",
        "code",
        "codeop",
        "atexit",
        "faulthandler",
    }
)


FORBIDDEN_BUILTINS = frozenset(
    {
        "open",
        "exec",
        "eval",
        "compile",
        "__import__",
        "exit",
        "quit",
        "breakpoint",
        "globals",
        "vars",
        "input",
    }
)


# Functions of os / sys that start processes, touch files, or end the process.
FORBIDDEN_OS_ATTRS = frozenset(
    {
        "system",
        "popen",
        "fork",
        "forkpty",
        "kill",
        "killpg",
        "_exit",
        "abort",
        "remove",
        "unlink",
        "rmdir",
        "removedirs",
        "rename",
        "renames",
        "replace",
        "open",
        "write",
        "read",
        "listdir",
        "scandir",
        "walk",
        "chdir",
        "mkdir",
        "makedirs",
        "symlink",
        "link",
        "chmod",
        "chown",
        "truncate",
        "dup",
        "dup2",
        "pipe",
        "setsid",
        "putenv",
        "unsetenv",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "execl",
        "execle",
        "execlp",
        "execlpe",
        "spawnl",
        "spawnv",
        "spawnve",
        "spawnvp",
        "posix_spawn",
        "posix_spawnp",
        "startfile",
        "fdopen",
    }
)


FORBIDDEN_SYS_ATTRS = frozenset(
    {"exit", "_exit", "modules", "_getframe", "settrace", "setprofile", "meta_path", "path_hooks"}
)


FORBIDDEN_TORCH_CALLS = frozenset({"load", "save", "from_file"})


INTROSPECTION_ATTRS = frozenset(
    {
        "__globals__",
        "__builtins__",
        "__subclasses__",
        "__code__",
        "__closure__",
        "f_back",
        "f_globals",
        "f_locals",
        "gi_frame",
        "tb_frame",
        "__loader__",
        "__spec__",
        "__wrapped__",
    }
)


PROTECTED_ROOTS = frozenset(
    {"torch", "triton", "time", "os", "sys", "builtins", "numpy", "math", "kernel_reward"}
)


# torch's compilers: the kernels they generate are not the candidate's own work (KernelBench issue #166). The runner
# also starts with torch.compile disabled, so a spelling this screen misses runs as plain torch.
COMPILER_ROOTS = frozenset({"compile", "_dynamo", "_inductor", "jit", "compiler"})


STREAM_ATTRS = frozenset(
    {
        "Stream",
        "stream",
        "ExternalStream",
        "set_stream",
        "StreamContext",
        "CUDAGraph",
        "graph",
        "graphs",
        "make_graphed_callables",
        "default_stream",
    }
)
