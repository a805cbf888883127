"""A fork server for the tests' ``python -m ncclctl`` runs (:func:`conftest.run_cli`).

A fresh interpreter costs ~0.13 s before ncclctl does anything, and each command then imports typer and its own
modules again (0.2-0.6 s on 2 loaded cores); the suite starts ncclctl ~2,300 times. Each pytest-xdist worker
instead starts two *zygotes* (``python -c`` subprocesses of this worker) that import typer and every ``ncclctl``
module once, then ``fork()`` one child per run. The child is set up as a fresh ``python -m ncclctl ARGS`` started
by ``subprocess.run(..., capture_output=True, text=True, env=ENV, cwd=CWD)`` would be:

- ``os.environ`` replaced by the requested environment (``TZ`` re-read, the temp-folder cache emptied), the
  working folder, ``sys.path[0]`` and ``sys.argv`` as ``-m`` sets them, a clean ``__main__`` namespace;
- stdin the caller's (or a pipe holding ``input``), stdout and stderr pipes read back here, ``sys.std*``
  rebuilt over them as Python builds them at start-up (a pipe is not a terminal: block-buffered stdout);
- the caller's resource limits and umask as they are at the call;
- signal dispositions as ``exec`` and Python's start-up leave them: what the caller ignores stays ignored
  (SIGINT included), every other signal at its default, SIGPIPE and SIGXFSZ ignored, SIGINT raising
  KeyboardInterrupt; the caller's signal mask;
- the module run as ``-m`` runs it (``runpy._run_module_as_main``); ``SystemExit`` becomes the exit status, an
  uncaught exception a traceback on stderr and status 1, an uncaught KeyboardInterrupt death by SIGINT; then
  the interpreter's exit work (non-daemon threads joined, atexit callbacks, streams flushed) and ``os._exit``.

The zygote only imports: no ncclctl module reads the environment, the clock, the working folder or the machine
when it is imported (every such read is inside a function; the imports leave no thread, no atexit callback and
no filled cache behind, which :func:`_serve` checks before it serves). What an interpreter reads at start-up
cannot be replayed in a forked child, so a run whose environment differs from the zygote's in such a variable
(``PYTHON*``, the locale's ``LC_*``/``LANG``, typer's ``TYPER_*``/``TERMINAL_WIDTH``, coverage's ``COV_CORE_*``)
is started fresh. Hash randomisation is also fixed at start-up: the two zygotes of a worker have their own
random seeds and take turns, so two runs in a row compared for deterministic output never share a seed (as two
fresh processes would not).

``NCCLCTL_TEST_FRESH=1`` turns all of this off: every run is a fresh process again.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

#: Environment variables read by the interpreter (or by a pre-imported module) when it starts: a run that
#: changes one of them cannot be served by a zygote started without the change.
_STARTUP_PREFIXES = ("PYTHON", "LC_", "TYPER_", "_TYPER_", "COV_CORE_")
_STARTUP_NAMES = ("LANG", "LANGUAGE", "TERMINAL_WIDTH")

_SERVER = r'''
import os, sys
os.chdir(sys.argv[1])
ctl = int(sys.argv[2])
import importlib, pkgutil
import typer, typer.main
import ncclctl
for _m in pkgutil.walk_packages(ncclctl.__path__, "ncclctl."):
    if _m.name != "ncclctl.__main__":
        importlib.import_module(_m.name)
del _m
sys.path.insert(0, sys.argv[3])
import cli_zygote
del sys.path[0]
cli_zygote._serve(ctl)
'''


def startup_key(env: dict[str, str]) -> tuple:
    """The variables of ``env`` a Python start-up reads (see :data:`_STARTUP_PREFIXES`)."""
    import site

    names = _STARTUP_NAMES + (("HOME",) if site.ENABLE_USER_SITE else ())
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(_STARTUP_PREFIXES) or k in names))


# -- the zygote ---------------------------------------------------------------------------------------------------

def _send_msg(sock: socket.socket, obj: object) -> None:
    data = pickle.dumps(obj)
    sock.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("zygote connection closed")
        buf += chunk
    return buf


def _recv_msg(sock: socket.socket) -> object:
    (n,) = struct.unpack("!I", _recv_exact(sock, 4))
    return pickle.loads(_recv_exact(sock, n))


def _serve(ctl_fd: int) -> None:
    """The zygote's loop: a request is one SEQPACKET message on ``ctl_fd`` carrying four descriptors (the
    request's connection, the child's stdin, stdout, stderr); the child reads the request itself from the
    connection and answers its pid; this loop reaps children and sends each one's exit status."""
    import atexit
    import tempfile

    assert atexit._ncallbacks() == 0, "a pre-imported module registered an atexit callback"  # type: ignore[attr-defined]
    assert threading.active_count() == 1, "a pre-imported module started a thread"
    assert tempfile.tempdir is None, "a pre-imported module filled tempfile's cache"
    import gc

    gc.collect()
    gc.freeze()  # the imported modules' objects: never scanned by a child's collections (nor copied for it)
    ctl = socket.socket(fileno=ctl_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    conns: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is ctl:
                try:
                    msg, fds, _flags, _addr = socket.recv_fds(ctl, 16, 4)
                except InterruptedError:  # pragma: no cover - PEP 475 retries
                    continue
                if not msg:  # the worker is gone
                    os._exit(0)
                conn = socket.socket(fileno=fds[0])
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    sel.close()
                    _child(conn, fds[1:], ctl, (wake_r, wake_w), conns)
                for fd in fds[1:]:
                    os.close(fd)
                conns[pid] = conn
            else:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
        while conns:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = conns.pop(pid, None)
            if conn is not None:
                try:
                    _send_msg(conn, os.waitstatus_to_exitcode(status))
                except OSError:
                    pass
                conn.close()


def _stdio(fd: int, write: bool, name: str, like: object, errors: str) -> object:
    """``sys.stdin``/``stdout``/``stderr`` over ``fd`` as CPython's start-up (``create_stdio``) builds them."""
    import io

    buf = io.open(fd, "wb" if write else "rb", buffering=-1, closefd=False)
    raw = buf.raw
    raw.name = name
    line = write and (raw.isatty() or fd == 2)
    return io.TextIOWrapper(buf, encoding=like.encoding, errors=errors, newline="\n",  # type: ignore[attr-defined]
                            line_buffering=line, write_through=False)


def _child(conn: socket.socket, stdio: list[int], ctl: socket.socket, wake: tuple[int, int],
           conns: dict[int, socket.socket]) -> None:
    """In the forked child: become ``python -m ncclctl ARGS`` as the request describes, run it, exit."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        ctl.close()
        for fd in wake:
            os.close(fd)
        for c in conns.values():
            c.close()
        req = _recv_msg(conn)
        assert isinstance(req, dict)
        _send_msg(conn, os.getpid())
        conn.close()
        for target, fd in enumerate(stdio):
            os.dup2(fd, target)
            os.close(fd)
        ignored = set(req["ignored"])
        for s in signal.valid_signals():
            if s in (signal.SIGKILL, signal.SIGSTOP):
                continue
            try:
                signal.signal(s, signal.SIG_IGN if s in ignored else signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if signal.SIGINT not in ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, req["mask"])
        import resource

        for which, limits in req["rlimits"].items():
            if resource.getrlimit(which) != limits:
                resource.setrlimit(which, limits)
        os.umask(req["umask"])
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        time.tzset()
        import tempfile

        tempfile.tempdir = None
        out_errors = sys.stdout.errors
        sys.stdin = sys.__stdin__ = _stdio(0, False, "<stdin>", sys.stdin, out_errors)  # type: ignore[misc]
        sys.stdout = sys.__stdout__ = _stdio(1, True, "<stdout>", sys.stdout, out_errors)  # type: ignore[misc]
        sys.stderr = sys.__stderr__ = _stdio(2, True, "<stderr>", sys.stderr, "backslashreplace")  # type: ignore[misc]
        sys.path[0] = os.getcwd()
        sys.argv = ["-m", *req["args"]]
        import types

        sys.modules["__main__"] = types.ModuleType("__main__")
        import runpy

        code = _run_as_main(runpy)
        code = _finalize(code)
    except BaseException:  # pragma: no cover - the set-up itself failed: say so on the run's stderr
        try:
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
        code = 1
    os._exit(code)


def _run_as_main(runpy: object) -> int:
    """Run ``ncclctl`` as ``python -m`` does; the status the interpreter would exit with."""
    try:
        runpy._run_module_as_main("ncclctl")  # type: ignore[attr-defined]
    except SystemExit as exc:
        c = exc.code
        if c is None:
            return 0
        if isinstance(c, int):
            return c & 0xFF
        try:
            print(c, file=sys.stderr)
        except BaseException:
            pass
        return 1
    except BaseException as exc:
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # this frame is not -m's
        sys.excepthook(type(exc), exc, tb)
        if isinstance(exc, KeyboardInterrupt):  # Python dies of the signal after the traceback
            _finalize(0)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return 1
    return 0


def _finalize(code: int) -> int:
    """The interpreter's exit work: wait for non-daemon threads, run atexit callbacks, flush the streams (a
    failed flush is reported as Python reports it, and the status becomes 120)."""
    import atexit

    if "threading" in sys.modules:
        sys.modules["threading"]._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()  # type: ignore[attr-defined]
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException as exc:
            try:
                import traceback

                print(f"Exception ignored in: {stream!r}", file=sys.__stderr__)
                traceback.print_exception(exc, file=sys.__stderr__)
            except BaseException:
                pass
            if code == 0:
                code = 120
    return code


# -- the worker's side ------------------------------------------------------------------------------------------

class Zygote:
    def __init__(self, repo: Path) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env_key = startup_key(dict(os.environ))
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, str(repo), str(child.fileno()),
                                      str(Path(__file__).resolve().parent)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=[child.fileno()], cwd=repo)
        child.close()
        self.ctl = parent
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.ctl.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait()

    def run(self, cmd: list[str], args: list[str], env: dict[str, str], cwd: Path, timeout: float | None,
            input: str | None) -> subprocess.CompletedProcess:
        mine, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r = in_w = None
        if input is not None:
            in_r, in_w = os.pipe()
        stdin_fd = in_r if in_r is not None else 0
        ignored = [s for s in signal.valid_signals()
                   if s not in (signal.SIGKILL, signal.SIGSTOP) and _ignored(s)]
        import resource

        umask = os.umask(0o022)
        os.umask(umask)
        req = {"args": list(args), "env": dict(env), "cwd": str(cwd), "ignored": ignored,
               "mask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])), "umask": umask,
               "rlimits": {getattr(resource, n): resource.getrlimit(getattr(resource, n))
                           for n in dir(resource) if n.startswith("RLIMIT_")}}
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with self.lock:
                socket.send_fds(self.ctl, [b"r"], [theirs.fileno(), stdin_fd, out_w, err_w])
        finally:
            theirs.close()
            for fd in (out_w, err_w, in_r):
                if fd is not None:
                    os.close(fd)
        try:
            _send_msg(mine, req)
            mine.settimeout(None if deadline is None else max(deadline - time.monotonic(), 0.001) + 30)
            pid = _recv_msg(mine)
            assert isinstance(pid, int)
            out, err, timed_out = _communicate(out_r, err_r, in_w, input, deadline)
            if timed_out:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                mine.settimeout(30)
                _recv_msg(mine)
                raise subprocess.TimeoutExpired(cmd, timeout, output=out, stderr=err)  # type: ignore[arg-type]
            mine.settimeout(None)
            code = _recv_msg(mine)
            assert isinstance(code, int)
        finally:
            mine.close()
            for fd in (out_r, err_r):
                os.close(fd)
        return subprocess.CompletedProcess(cmd, code, _text(out), _text(err))


def _ignored(s: int) -> bool:
    try:
        return signal.getsignal(s) is signal.SIG_IGN
    except (OSError, ValueError):  # pragma: no cover
        return False


def _text(data: bytes) -> str:
    """As ``subprocess`` decodes a text-mode pipe: the locale's encoding, strict, universal newlines."""
    import locale

    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def _communicate(out_r: int, err_r: int, in_w: int | None, input: str | None,
                 deadline: float | None) -> tuple[bytes, bytes, bool]:
    """Read both pipes to their end (and feed ``input``), as ``Popen.communicate``; True when the deadline
    passed first."""
    import locale

    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    sel = selectors.DefaultSelector()
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(err_r, selectors.EVENT_READ)
    pending = b""
    if in_w is not None:
        text = (input or "").replace("\n", os.linesep)
        pending = text.encode(locale.getpreferredencoding(False))
        if pending:
            os.set_blocking(in_w, False)
            sel.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(in_w)
            in_w = None
    open_reads = 2
    timed_out = False
    try:
        while open_reads or in_w is not None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(left):
                fd = key.fd
                if fd == in_w:
                    try:
                        n = os.write(fd, pending[:65536])
                    except BrokenPipeError:
                        n = len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(fd)
                        os.close(fd)
                        in_w = None
                    continue
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    sel.unregister(fd)
                    open_reads -= 1
    finally:
        sel.close()
        if in_w is not None:
            os.close(in_w)
    return b"".join(chunks[out_r]), b"".join(chunks[err_r]), timed_out


_ZYGOTES: list[Zygote] = []
_OWNER = [0]
_TURN = [0]
_START_LOCK = threading.Lock()


def fresh_wanted() -> bool:
    return os.environ.get("NCCLCTL_TEST_FRESH", "") not in ("", "0")


def run(cmd: list[str], args: list[str], env: dict[str, str], cwd: Path, timeout: float | None,
        input: str | None = None) -> subprocess.CompletedProcess | None:
    """The run through a zygote, or None where it must be a fresh process (``NCCLCTL_TEST_FRESH``, or a
    start-up variable that differs from the zygotes')."""
    if fresh_wanted():
        return None
    with _START_LOCK:
        if _OWNER[0] != os.getpid():  # first run in this worker (or a fork of it): start the pair
            _ZYGOTES.clear()
            _OWNER[0] = os.getpid()
        for i, z in enumerate(_ZYGOTES):
            if not z.alive():
                _ZYGOTES[i] = Zygote(cwd)
        while len(_ZYGOTES) < 2:
            _ZYGOTES.append(Zygote(cwd))
        if startup_key(env) != _ZYGOTES[0].env_key:
            return None
        _TURN[0] ^= 1
        z = _ZYGOTES[_TURN[0]]
    return z.run(cmd, args, env, cwd, timeout, input)


def shutdown() -> None:
    if _OWNER[0] == os.getpid():
        for z in _ZYGOTES:
            z.close()
        _ZYGOTES.clear()
