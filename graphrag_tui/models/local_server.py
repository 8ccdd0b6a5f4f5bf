"""The child process that serves the embedded local LLM: llama.cpp's own HTTP server from
the `xllamacpp` wheel, on 127.0.0.1 at a port the OS picks.

    python -m graphrag_tui.models.local_server --model FILE.gguf --ctx 8192 --parallel 1 --threads 1

Protocol with the parent (graphrag_tui.models.local_llm):
- stdout carries exactly one JSON line: `{"ready": true, "address": "http://127.0.0.1:PORT",
  "pid": N}` once the model is loaded and the server listens, or `{"ready": false, "error":
  "..."}` when it cannot start (then the process exits with status 3).
- stdin is a pipe held open by the parent and never written to. When it reaches end of file
  (the parent closed it, exited, or crashed, even by SIGKILL) this process exits at once.
  On Linux the process also asks for SIGTERM when its parent dies (PR_SET_PDEATHSIG).
- SIGTERM ends it (the default action: no handler is installed).

Nothing here may import graphrag_tui's heavier modules: the child should start fast.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if parent_pid and os.getppid() != parent_pid:  # the parent died before prctl
        os._exit(0)


def _watch_stdin() -> None:
    """Exit as soon as the parent's end of the stdin pipe is closed."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os._exit(0)


def _say(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="graphrag_tui.models.local_server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--ctx", type=int, required=True, help="total context window, split over the slots")
    parser.add_argument("--parallel", type=int, default=1, help="parallel slots")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--alias", default=None)
    parser.add_argument("--parent-pid", type=int, default=0)
    args = parser.parse_args(argv)

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this ends
    _die_with_parent(args.parent_pid)
    threading.Thread(target=_watch_stdin, name="parent-watch", daemon=True).start()

    try:
        import xllamacpp
    except Exception as error:  # ImportError, or an illegal instruction surfaced as OSError
        _say({"ready": False, "error": f"cannot import xllamacpp: {error}"})
        return 3
    try:
        params = xllamacpp.CommonParams()
        params.model.path = args.model
        params.n_ctx = args.ctx
        params.n_parallel = args.parallel
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; the address is reported below
        params.verbosity = 0
        params.warmup = False
        if args.alias:
            params.model_alias = {args.alias}
        server = xllamacpp.Server(params)
        address = server.listening_address
    except Exception as error:
        _say({"ready": False, "error": f"{type(error).__name__}: {error}"})
        return 3
    _say({"ready": True, "address": address, "pid": os.getpid()})
    while True:  # serve until SIGTERM, or until the stdin watcher exits the process
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
