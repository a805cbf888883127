"""The command line: ``main`` and the command tree, registered without importing any command module.

:data:`COMMANDS` names every top-level command, the module that holds it and its one-line help. ``ncclctl --help``
lists them from this table; ``ncclctl lint ...`` (or ``ncclctl lint --help``) imports only
:mod:`ncclctl.cli.lint`. ``ncclctl --version`` imports nothing but this module. Command modules import
:mod:`ncclctl.cli.common` and typer, and their implementations inside the command functions.

``main`` turns every outcome into a documented exit code (see :class:`ncclctl.errors.ExitCode`): a Ctrl-C at any
moment is 130 without a traceback, a closed pipe (``| head``) is quiet, a bug is exit 70 with one line (a
traceback only with ``NCCLCTL_DEBUG=1``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple



class Entry(NamedTuple):
    module: str
    attr: str
    help: str


#: Top-level commands in the order ``ncclctl --help`` lists them (a test checks each help line against the
#: command's own docstring and that every module's commands are here).
COMMANDS: dict[str, Entry] = {
    "probe": Entry("ncclctl.cli.probe", "probe_app",
                   "Probe the node (NUMA, PCIe tree, GPUs, NVLinks, NICs, netdevs) and print its model."),
    "snapshot": Entry("ncclctl.cli.probe", "snapshot_app",
                      "Capture this host into a fixture: only the files the probe reads, command outputs, NVML answers."),
    "topo": Entry("ncclctl.cli.topo", "topo_app", "NCCL topology XML (NCCL_TOPO_FILE): generate, validate, show, diff, predict."),
    "rails": Entry("ncclctl.cli.rails", "rails_app",
                   "Assign each GPU its rail NIC port from PCIe locality; print the rail table and an exact NCCL_IB_HCA."),
    "rings": Entry("ncclctl.cli.rails", "rings_app",
                   "NCCL graph XML (NCCL_GRAPH_FILE) with rail-pinned ring and tree channels."),
    "lint": Entry("ncclctl.cli.lint", "lint_app", "Lint one node (this host, or --root/--model) with every enabled rule."),
    "rules": Entry("ncclctl.cli.lint", "rules_app",
                   "List every rule (lint, fleet, topology/graph file, fabric): id, slug, family, severity, when it runs, title."),
    "explain": Entry("ncclctl.cli.lint", "explain_app",
                     "Print one rule's documentation: what it finds, why it hurts NCCL, how it is detected, how to fix it."),
    "fleet": Entry("ncclctl.cli.fleet", "fleet_app", "Fleet-wide checks over many snapshots or node models."),
    "fabric": Entry("ncclctl.cli.fabric", "fabric_app",
                    "The fabric: load ibnetdiscover/iblinkinfo/LLDP, check rail cabling, order hosts for rings, "
                    "synthesize test fabrics."),
    "parse": Entry("ncclctl.cli.parse", "parse_app",
                   "Parse one command's output and print what ncclctl understood of it (the records and the notes "
                   "on what it left aside); exit 3 with FILE:LINE and a fix when it cannot read it."),
    "log": Entry("ncclctl.cli.logs", "log_app",
                 "NCCL_DEBUG logs: show what NCCL did (versions, NICs, transports, rings, trees), check it against rules "
                 "and the node's model, diff two runs."),
    "perf": Entry("ncclctl.cli.perf", "perf_app",
                  "nccl-tests results: bus bandwidth per collective against what the hardware should give."),
    "conf": Entry("ncclctl.cli.ops", "conf_app",
                  "/etc/nccl.conf derived from the node: rails, socket interface, RoCE GID and traffic class."),
    "facts": Entry("ncclctl.cli.ops", "facts_app",
                   "One JSON document of node facts for Ansible (/etc/ansible/facts.d/ncclctl.fact) and inventories."),
    "schema": Entry("ncclctl.cli.ops", "schema_app",
                    "Where the installed JSON schemas and XSDs are (list, a path, or the content)."),
    "completion": Entry("ncclctl.cli.ops", "completion_app",
                        "Print the shell completion script (bash, zsh, fish, powershell)."),
}

HELP = """ncclctl: the first tool to reach for when NCCL is slow, hangs, or picks the wrong NIC.

Probe GPU nodes, emit and validate NCCL topology files, lint NCCL networking.

Exit codes: 0 ok, 1 findings at or above the fail level (or drift with --check --exit-code), 2 usage,
3 invalid input, 4 a required source unavailable (e.g. a fleet host past --host-timeout), 70 internal error,
130 interrupted.
"""


def load_command(name: str, sub: str | None = None) -> Any:
    """The click command of a top-level command (imports its module). ``sub``: the word after it on the command
    line; when it names one of the group's commands, the group is built with that command alone (typer works out
    every command's options when it builds a group: ~1 ms a command, 5 ms for ``topo``). Anything else (an
    option, a typo, nothing) gets the whole group, so help, errors and suggestions are the group's."""
    import importlib

    import typer

    entry = COMMANDS[name]
    app = getattr(importlib.import_module(entry.module), entry.attr)
    if sub is not None and not sub.startswith("-"):
        only = [c for c in app.registered_commands if c.name == sub]
        if only and len(only) < len(app.registered_commands):
            import copy

            narrowed = copy.copy(app)
            narrowed.registered_commands = only
            app = narrowed
    cmd = typer.main.get_command(app)
    cmd.name = name
    return cmd


def _root(args: list[str] | None = None) -> Any:
    """The root command; ``args``, the command line, lets a group be built with just the command it names."""
    import typer

    from ncclctl.cli.common import Group

    class Root(Group):
        def list_commands(self, ctx: Any) -> list[str]:
            return list(COMMANDS)

        def get_command(self, ctx: Any, name: str) -> Any:
            if name not in COMMANDS:
                return None
            sub = None
            if args and name in args:
                i = args.index(name)
                sub = args[i + 1] if i + 1 < len(args) else None
            return load_command(name, sub)

        def format_commands(self, ctx: Any, formatter: Any) -> None:
            with formatter.section("Commands"):
                formatter.write_dl([(name, e.help) for name, e in COMMANDS.items()])

    app = typer.Typer(name="ncclctl", cls=Root, rich_markup_mode=None, pretty_exceptions_enable=False,
                      no_args_is_help=True, add_completion=False,
                      context_settings={"help_option_names": ["-h", "--help"]})

    def _version(value: bool) -> None:
        if value:
            from ncclctl import __version__

            print(f"ncclctl {__version__}")
            raise typer.Exit(0)

    @app.callback(help=HELP)
    def _main(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        pass

    if os.environ.get("_NCCLCTL_COMPLETE"):
        # The shell asks for completions (the script of 'ncclctl completion SHELL'): typer registers its shell
        # classes only for apps with its own --install-completion options, which ncclctl leaves out.
        from typer._completion_classes import completion_init  # type: ignore[import-not-found,unused-ignore]

        completion_init()
    return typer.main.get_command(app)


def _wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg in ("--format=json", "-fjson"):
            return True
        if arg in ("--format", "-f") and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
    return False


def _fail(exc: Any, argv: list[str]) -> int:
    if _wants_json(argv):
        import json

        from ncclctl import JSON_SCHEMA_VERSION

        sys.stdout.write(json.dumps({"schema_version": JSON_SCHEMA_VERSION, "ok": False, "error": exc.to_dict()},
                                    indent=2) + "\n")
    from ncclctl.cli.common import terminal_safe

    print(f"ncclctl: error: {terminal_safe(str(exc))}", file=sys.stderr)
    return int(exc.exit_code)


def _quiet_stdout() -> None:
    """The reader went away (``| head``): point stdout at /dev/null so the exit flush cannot complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:  # pragma: no cover - no stdout at all
        pass


def _run(args: list[str]) -> int:
    if args == ["--version"]:  # the common probe of an install: no typer, no click
        from ncclctl import __version__

        print(f"ncclctl {__version__}")
        return 0
    import typer

    from ncclctl.errors import ExitCode, NcclctlError

    import importlib

    try:  # typer >= 0.20 vendors click as typer._click; older releases use click itself
        cx: Any = importlib.import_module("typer._click.exceptions")
    except ImportError:  # pragma: no cover - older typer
        cx = importlib.import_module("click.exceptions")

    def kinds(name: str) -> tuple[type[BaseException], ...]:
        found: list[type[BaseException]] = []
        for t in (getattr(typer, name, None), getattr(cx, name, None)):
            if isinstance(t, type) and issubclass(t, BaseException) and t not in found:
                found.append(t)
        return tuple(found)

    exit_types, abort_types, click_types = kinds("Exit"), kinds("Abort"), kinds("ClickException")
    try:
        rv = _root(args).main(args=args, prog_name="ncclctl", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C inside a command into Exit(130), returned here
            print("ncclctl: interrupted", file=sys.stderr)
        return code
    except exit_types as exc:
        code = int(getattr(exc, "exit_code", 1))
        if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C inside a command into Exit(130)
            print("ncclctl: interrupted", file=sys.stderr)
        return code
    except abort_types:
        print("ncclctl: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except click_types as exc:
        usage_error: Any = exc
        usage_error.show()
        if "--nagios" in args:  # a monitoring plugin answers UNKNOWN (3) to a bad command line, not CRITICAL (2)
            print(f"NCCLCTL UNKNOWN - usage: {usage_error.format_message()}".replace("|", "/"))
            return 3
        return int(ExitCode.USAGE)
    except NcclctlError as exc:
        return _fail(exc, args)


def _done() -> None:
    """The work is done and its output flushed: a Ctrl-C from here on must not turn the exit into a traceback
    (Python would die of the signal while shutting down)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: Large results a command keeps until the process ends (:func:`keep_until_exit`).
_KEEP: list = []


def keep_until_exit(*objs: Any) -> None:
    """Keep ``objs`` (a fabric's graph and layout: millions of small objects at SuperPOD scale) alive until the
    process ends: :func:`main`, run as the console script, then exits without freeing them one by one (0.1-0.2 s
    at 32,768 nodes; see :func:`_nothing_left_at_exit`); the operating system takes the memory back at once.
    In-process calls free them as usual."""
    _KEEP.extend(objs)


def _nothing_left_at_exit() -> bool:
    """Whether ending the process at once skips nothing but freeing memory and unloading modules (10-15 ms for a
    command that imported typer and the NCCL model; far more after a fabric): no tracer or profiler (coverage and
    cProfile write their data at exit), no other thread, no atexit callback (a log handler's flush, a temporary
    file's cleanup). Output is flushed by the caller; files are written whole before a command returns."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return False
    import atexit

    callbacks = getattr(atexit, "_ncallbacks", None)  # CPython; elsewhere exit the usual way
    if callbacks is None or callbacks() != 0:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def _redeliver_interrupts(previous: Any) -> Any:
    """A ``sys.unraisablehook`` that does not let Python swallow a Ctrl-C.

    A SIGINT whose handler runs inside a callback Python cannot raise from (a weakref callback such as the import
    system's module-lock cleanup, a ``__del__``) is printed as "Exception ignored in ... Traceback ...
    KeyboardInterrupt" and then dropped: the command would go on and exit 0/1 with a traceback on stderr. The hook
    sends the signal again instead, so the interrupt is raised at the next ordinary line, outside the callback, and
    :func:`main` reports it as 130. Every other unraisable exception goes to ``previous``.

    Any call that marks the signal from this thread (``signal.raise_signal``, ``os.kill``, even
    ``_thread.interrupt_main``) has the handler run at once, inside this hook, where it would be dropped again; a
    short-lived thread sends it instead, to the thread that called :func:`main`, once this hook has returned (a real
    signal, so a blocking call such as a sleep or a read is interrupted too; should it land in another such
    callback, this hook passes it on once more)."""
    import _thread
    import signal

    target = _thread.get_ident()

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type, KeyboardInterrupt):
            _thread.start_new_thread(signal.pthread_kill, (target, signal.SIGINT))
            return
        previous(unraisable)

    return hook


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the command and turn every outcome into a documented exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _redeliver_interrupts(previous_hook)
    try:
        code = _run(args)
        sys.stdout.flush()
        _done()
    except KeyboardInterrupt:
        print("ncclctl: interrupted", file=sys.stderr)
        code = 130
    except BrokenPipeError:
        _quiet_stdout()
        code = 0
    except Exception as exc:  # a bug: say so without a traceback unless asked
        if os.environ.get("NCCLCTL_DEBUG"):
            raise
        print(f"ncclctl: internal error: {type(exc).__name__}: {exc} "
              "(this is a bug; rerun with NCCLCTL_DEBUG=1 for a traceback and report it)", file=sys.stderr)
        code = 70
    sys.unraisablehook = previous_hook
    # the console script (see keep_until_exit), all output written and flushed, nothing left to run at exit
    if argv is None and _nothing_left_at_exit():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass  # the usual exit below reports it
        else:
            os._exit(int(code))
    _KEEP.clear()
    sys.exit(int(code))


__all__ = ["COMMANDS", "Entry", "load_command", "main"]
