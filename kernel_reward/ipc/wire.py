"""Length-prefixed JSON messages over a stream socket (service <-> child, judge <-> runner).

The child is untrusted, so the reader bounds the size of what it accepts and only ever parses JSON (never
pickle). Each frame is a 4-byte big-endian length followed by UTF-8 JSON.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
_HEADER = struct.Struct(">I")


class WireError(RuntimeError):
    """The peer sent something that is not a well-formed message."""


def send_message(sock: socket.socket, message: dict[str, Any]) -> None:
    payload = json.dumps(message).encode()
    if len(payload) > MAX_MESSAGE_BYTES:
        raise WireError(f"message of {len(payload)} bytes exceeds the {MAX_MESSAGE_BYTES}-byte limit")
    sock.sendall(_HEADER.pack(len(payload)) + payload)


class MessageReader:
    """Incremental reader for a non-blocking socket: ``feed()`` after select says readable, then ``pop()``."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.eof = False

    def feed(self) -> None:
        try:
            data = self.sock.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.eof = True
        self.buffer += data

    def pop(self) -> dict[str, Any] | None:
        if len(self.buffer) < _HEADER.size:
            return None
        (size,) = _HEADER.unpack_from(self.buffer)
        if size > MAX_MESSAGE_BYTES:
            raise WireError(f"peer announced a {size}-byte message (limit {MAX_MESSAGE_BYTES})")
        if len(self.buffer) < _HEADER.size + size:
            return None
        payload = bytes(self.buffer[_HEADER.size : _HEADER.size + size])
        del self.buffer[: _HEADER.size + size]
        try:
            message = json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise WireError(f"malformed message from peer: {exc}") from exc
        if not isinstance(message, dict):
            raise WireError(f"message from peer is a {type(message).__name__}, expected an object")
        return message


def recv_message_blocking(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, Any] | None:
    """Blocking read of one message; None at end of file. Anything but a JSON object of at most ``max_bytes``
    (deep nesting that exhausts the parser included) raises WireError."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > max_bytes:
        raise WireError(f"peer announced a {size}-byte message (limit {max_bytes})")
    payload = _recv_exact(sock, size)
    if payload is None:
        return None
    try:
        message = json.loads(payload)
    except (ValueError, RecursionError) as exc:  # not JSON (UnicodeDecodeError is a ValueError), or too deep
        raise WireError(f"not JSON: {type(exc).__name__}: {str(exc)[:200]}") from exc
    if not isinstance(message, dict):
        raise WireError(f"message from peer is a {type(message).__name__}, expected an object")
    return message


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        data = sock.recv(size - len(chunks))
        if not data:
            return None
        chunks += data
    return bytes(chunks)
